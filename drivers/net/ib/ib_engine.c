/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The engine: one loop on a dedicated lcore that owns every QP's transport
 * state. Each pass receives a burst per port, takes doorbells, runs the
 * active QPs (responder READ answers, requester, timers) and flushes TX.
 *
 * Control operations (modify/destroy) are handed to the loop through a
 * small ring and run between passes, so the transport state has one owner.
 *
 * Back-off when idle (adaptive): spin, then yield, then sleep on a futex
 * that doorbells and control calls wake. Polling mode never sleeps.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "ib_hca.h"

#define ENG_MAX_DEVS	16
#define ENG_SPIN_US	50
#define ENG_YIELD_US	2000
#define ENG_NAP_US	200	/* sleep bound while a real port may receive */
#define ENG_IDLE_PASSES	256	/* before an idle QP leaves the active list */

struct ib_ctl {
	void (*fn)(void *);
	void *arg;
	uint32_t done;
};

struct ib_engine {
	unsigned int lcore;
	int launched;
	int poll_mode;
	rte_spinlock_t run;	/* inline mode: one pass at a time */
	uint32_t stop;
	struct ib_dev *devs[ENG_MAX_DEVS];
	uint32_t ndev;
	struct rte_ring *ctl;
	uint32_t sleeping;
	uint32_t wake_seq;
	rte_spinlock_t lock;	/* launch and device list: control path */
};

static struct ib_engine engine = {
	.lock = RTE_SPINLOCK_INITIALIZER,
	.run = RTE_SPINLOCK_INITIALIZER,
};

/* Set at the first device of an inline configuration. */
int ib_engine_inline;

/*
 * After publishing work (a doorbell or control entry in a ring). The full
 * fence orders that store before the load of `sleeping`; engine_sleep does
 * the mirror image (store `sleeping`, then look at the rings). Without it
 * the CPU may satisfy the load first (x86 reorders a store with a later
 * load): the engine then finds the rings empty, this side finds it awake,
 * and on the loopback device, which sleeps without a timeout, the work
 * waits forever (seen as "engine did not answer" with both CPUs busy).
 */
static void
engine_wake(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&engine.sleeping, __ATOMIC_SEQ_CST)) {
		__atomic_fetch_add(&engine.wake_seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &engine.wake_seq, FUTEX_WAKE_PRIVATE, 1,
			NULL, NULL, 0);
	}
}

void
ib_engine_activate(struct ib_qp *qp)
{
	if (!qp->active) {
		qp->active = 1;
		TAILQ_INSERT_TAIL(&qp->dev->active, qp, next);
	}
}

/*
 * Application side: tell the engine the QP has new work. db_armed stays set
 * while the QP is queued or on the engine's active list, so a busy QP costs
 * the poster one fence and one shared load. The engine clears the flag only
 * when it deactivates the QP and then looks at the producer index again;
 * with a full fence on both sides, either the engine sees the new WQE or the
 * poster sees the cleared flag and queues a doorbell.
 */
void
ib_engine_doorbell(struct ib_qp *qp)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&qp->db_armed, __ATOMIC_RELAXED))
		return;
	if (__atomic_exchange_n(&qp->db_armed, 1, __ATOMIC_SEQ_CST) == 0) {
		/* The QPN, not the pointer: a QP destroyed while its doorbell
		 * waits is then simply not found.
		 */
		while (rte_ring_mp_enqueue(qp->dev->db_ring,
					   (void *)(uintptr_t)qp->ibv.qp_num) != 0)
			rte_pause();	/* the ring holds one entry per QP */
		engine_wake();
	}
}

/* Engine: take the QP off the active list unless work arrived meanwhile. */
static void
deactivate(struct ib_dev *dev, struct ib_qp *qp)
{
	TAILQ_REMOVE(&dev->active, qp, next);
	qp->active = 0;
	qp->idle_passes = 0;
	__atomic_store_n(&qp->db_armed, 0, __ATOMIC_SEQ_CST);
	if (ib_qp_busy(qp) &&
	    __atomic_exchange_n(&qp->db_armed, 1, __ATOMIC_SEQ_CST) == 0)
		ib_engine_activate(qp);
}

static unsigned int
run_ctl(void)
{
	struct ib_ctl *c;
	unsigned int n = 0;

	while (rte_ring_sc_dequeue(engine.ctl, (void **)&c) == 0) {
		c->fn(c->arg);
		__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
		n++;
	}
	return n;
}

/* One pass over a device; returns how much work was found. */
int
ib_engine_poll(struct ib_dev *dev)
{
	struct rte_mbuf *pkts[IB_RX_BURST];
	void *qpns[IB_RX_BURST];
	struct ib_qp *qp, *tmp;
	int state;
	unsigned int i, n, work;
	uint64_t now;

	ib_neigh_timer(dev, rte_rdtsc());
	n = rte_eth_rx_burst(dev->port_id, 0, pkts, IB_RX_BURST);
	for (i = 0; i < n; i++)
		ib_rx(dev, pkts[i]);
	ib_resp_flush_acks(dev);
	work = n;
	if (unlikely(!rte_ring_empty(dev->inject))) {
		n = rte_ring_sc_dequeue_burst(dev->inject, (void **)pkts,
					      IB_RX_BURST, NULL);
		for (i = 0; i < n; i++)
			ib_rx(dev, pkts[i]);
		ib_resp_flush_acks(dev);
		work += n;
	}

	n = rte_ring_sc_dequeue_burst(dev->db_ring, qpns, IB_RX_BURST, NULL);
	for (i = 0; i < n; i++) {
		qp = dev->qp_tbl[(uintptr_t)qpns[i]];
		if (qp != NULL)
			ib_engine_activate(qp);
	}
	work += n;

	now = rte_rdtsc();
	for (qp = TAILQ_FIRST(&dev->active); qp != NULL; qp = tmp) {
		tmp = TAILQ_NEXT(qp, next);
		state = __atomic_load_n(&qp->attr.qp_state, __ATOMIC_ACQUIRE);
		if (state == IBV_QPS_ERR)
			ib_qp_flush(qp);
		else if (state == IBV_QPS_SQE)
			ib_qp_to_sqe(qp);	/* WRs posted meanwhile flush */
		ib_resp_run(qp);
		ib_req_run(qp);
		ib_comp_timer(qp, now);
		/* A QP that just went idle stays a little while, so that a
		 * steady poster does not pay a doorbell per WR.
		 */
		if (ib_qp_busy(qp))
			qp->idle_passes = 0;
		else if (++qp->idle_passes >= ENG_IDLE_PASSES)
			deactivate(dev, qp);
		work++;
	}
	ib_tx_flush(dev);
	return work + dev->tx_n + ib_fault_pending(dev);
}

static int
engine_has_active(void)
{
	uint32_t i;

	for (i = 0; i < engine.ndev; i++)
		if (!TAILQ_EMPTY(&engine.devs[i]->active) ||
		    engine.devs[i]->tx_n != 0)
			return 1;
	return 0;
}

static int
engine_has_doorbell(void)
{
	uint32_t i;

	if (!rte_ring_empty(engine.ctl))
		return 1;
	for (i = 0; i < engine.ndev; i++)
		if (!rte_ring_empty(engine.devs[i]->db_ring))
			return 1;
	return 0;
}

static void
engine_sleep(void)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ENG_NAP_US * 1000 };
	int timed = 0;
	uint32_t i, seq;

	for (i = 0; i < engine.ndev; i++)
		if (!engine.devs[i]->conf.loopback)
			timed = 1;	/* packets may arrive from outside */
	seq = __atomic_load_n(&engine.wake_seq, __ATOMIC_SEQ_CST);
	__atomic_store_n(&engine.sleeping, 1, __ATOMIC_SEQ_CST);
	if (!engine_has_doorbell() && !engine.stop)
		syscall(SYS_futex, &engine.wake_seq, FUTEX_WAIT_PRIVATE, seq,
			timed ? &ts : NULL, NULL, 0);
	__atomic_store_n(&engine.sleeping, 0, __ATOMIC_SEQ_CST);
}

static int
engine_main(void *arg)
{
	uint64_t hz = rte_get_tsc_hz(), idle_since = 0, now;
	uint32_t i;

	(void)arg;
	while (!__atomic_load_n(&engine.stop, __ATOMIC_ACQUIRE)) {
		unsigned int work = run_ctl();

		for (i = 0; i < engine.ndev; i++)
			work += ib_engine_poll(engine.devs[i]);
		if (work || engine.poll_mode) {
			idle_since = 0;
			continue;
		}
		now = rte_rdtsc();
		if (idle_since == 0)
			idle_since = now;
		if (now - idle_since < hz / 1000000 * ENG_SPIN_US)
			rte_pause();
		else if (now - idle_since < hz / 1000000 * ENG_YIELD_US ||
			 engine_has_active())
			sched_yield();
		else
			engine_sleep();
	}
	return 0;
}

static void
add_dev(void *arg)
{
	engine.devs[engine.ndev++] = arg;
}

/* Start the engine lcore with the first QP of a device (cheap when idle). */
int
ib_engine_attach(struct ib_dev *dev)
{
	uint32_t i;
	int err = 0;

	rte_spinlock_lock(&engine.lock);
	for (i = 0; i < engine.ndev; i++)
		if (engine.devs[i] == dev)
			goto out;
	if (engine.ndev == ENG_MAX_DEVS) {
		err = ENOSPC;
		goto out;
	}
	if (!engine.launched) {
		engine.ctl = rte_ring_create("ib_ctl", 64, SOCKET_ID_ANY,
					     RING_F_SC_DEQ);
		if (engine.ctl == NULL) {
			err = ENOMEM;
			goto out;
		}
		engine.lcore = dev->conf.lcore;
		engine.poll_mode = dev->conf.engine_mode == IB_ENGINE_POLL;
		add_dev(dev);
		dev->eng = (struct ib_engine *)&engine;
		if (dev->conf.engine_mode == IB_ENGINE_INLINE) {
			/* No lcore: the application's calls run the passes. */
			ib_engine_inline = 1;
			engine.launched = 1;
			goto out;
		}
		if (rte_eal_remote_launch(engine_main, NULL, engine.lcore) != 0) {
			engine.ndev--;
			err = EBUSY;
			goto out;
		}
		engine.launched = 1;
		dev->eng = (struct ib_engine *)&engine;
		goto out;
	}
	dev->eng = (struct ib_engine *)&engine;
	rte_spinlock_unlock(&engine.lock);
	return ib_engine_exec(dev, add_dev, dev);
out:
	rte_spinlock_unlock(&engine.lock);
	return err;
}

/*
 * Run @fn on the engine lcore between two passes and wait for it. Before
 * the engine runs (or on the engine itself) it runs here directly.
 */
int
ib_engine_exec(struct ib_dev *dev, void (*fn)(void *), void *arg)
{
	struct ib_ctl c = { .fn = fn, .arg = arg };
	uint64_t deadline;

	if (ib_engine_inline) {
		int i;

		rte_spinlock_lock(&engine.run);
		fn(arg);
		rte_spinlock_unlock(&engine.run);
		/* What the change set in motion (a drain, a flush) happens
		 * now, as it would on the engine lcore.
		 */
		for (i = 0; i < IB_INLINE_PASSES && ib_engine_progress(); i++)
			;
		return 0;
	}
	if (dev->eng == NULL || !engine.launched ||
	    rte_lcore_id() == engine.lcore) {
		fn(arg);
		return 0;
	}
	while (rte_ring_mp_enqueue(engine.ctl, &c) != 0)
		sched_yield();
	engine_wake();
	deadline = rte_rdtsc() + 10 * rte_get_tsc_hz();
	while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE)) {
		if (rte_rdtsc() > deadline) {
			/* The engine is wedged; the caller's stack frame must
			 * stay valid, so keep waiting but say so once.
			 */
			IB_LOG(ERR, "engine did not answer within 10 s");
			deadline = UINT64_MAX;
		}
		sched_yield();
	}
	return 0;
}

static void
nop(void *arg)
{
	(void)arg;
}

void
ib_engine_quiesce(struct ib_dev *dev)
{
	ib_engine_exec(dev, nop, NULL);
}

static void
remove_dev(void *arg)
{
	uint32_t i;

	for (i = 0; i < engine.ndev; i++)
		if (engine.devs[i] == arg) {
			engine.devs[i] = engine.devs[--engine.ndev];
			break;
		}
}

void
ib_engine_detach(struct ib_dev *dev)
{
	if (dev->eng != NULL)
		ib_engine_exec(dev, remove_dev, dev);
	dev->eng = NULL;
}

/*
 * dpib_inject(): a frame handed to the receive path as if the port had
 * delivered it (tests, fuzzing). Without a running engine it is processed
 * here, on the caller's thread.
 */
int
ib_inject(struct ib_dev *dev, const void *frame, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dev->pool);
	char *p;

	if (m == NULL)
		return -ENOBUFS;
	p = rte_pktmbuf_append(m, len);
	if (p == NULL) {
		rte_pktmbuf_free(m);
		return -EMSGSIZE;
	}
	memcpy(p, frame, len);
	if (dev->eng == NULL || !engine.launched || ib_engine_inline) {
		rte_spinlock_lock(&engine.run);
		ib_rx(dev, m);
		ib_resp_flush_acks(dev);
		ib_tx_flush(dev);
		rte_spinlock_unlock(&engine.run);
		return 0;
	}
	while (rte_ring_mp_enqueue(dev->inject, m) != 0)
		sched_yield();
	engine_wake();
	return 0;
}

/*
 * Inline mode: one engine pass over every device, from an application
 * call. A thread finding another one inside a pass does not wait.
 */
int
ib_engine_progress(void)
{
	uint32_t i;
	int work = 0;

	if (!rte_spinlock_trylock(&engine.run))
		return 0;
	for (i = 0; i < engine.ndev; i++)
		work += ib_engine_poll(engine.devs[i]);
	rte_spinlock_unlock(&engine.run);
	return work;
}

/*
 * At exit, keep the engine going a moment for devices on real links: the
 * last ACKs of a finished exchange are then delivered before the port
 * closes (a memif peer loses what it has not read yet when the link goes).
 */
static void
linger(void)
{
	uint64_t hz = rte_get_tsc_hz(), end = rte_rdtsc() + hz / 1000 * 100;
	uint64_t idle = rte_rdtsc();
	uint32_t i;
	int remote = 0;

	for (i = 0; i < engine.ndev; i++)
		remote |= !engine.devs[i]->conf.loopback;
	if (!remote)
		return;
	while (rte_rdtsc() < end && rte_rdtsc() - idle < hz / 1000 * 20) {
		if (!ib_engine_inline)
			rte_delay_us_sleep(1000);
		else if (ib_engine_progress())
			idle = rte_rdtsc();
	}
}

void
ib_engine_shutdown(void)
{
	if (!engine.launched)
		return;
	linger();
	if (ib_engine_inline)
		return;
	__atomic_store_n(&engine.stop, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&engine.wake_seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &engine.wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	rte_eal_wait_lcore(engine.lcore);
	engine.launched = 0;
}
