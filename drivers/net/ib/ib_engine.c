/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The engine: one loop that owns every QP's transport state. Each pass
 * takes in what each port has (up to ENG_RX_BUDGET frames), takes
 * doorbells, runs the active QPs (responder READ answers, requester,
 * timers), looks at a few waiting QPs' timers and flushes TX.
 *
 * The loop runs on the engine lcore in every mode; the modes differ in
 * who else runs passes and in what the loop does when there is no work:
 *   poll      never stops spinning (benchmarks on a core of their own);
 *   adaptive  spins spin_us after the last work, then sleeps until a frame
 *             arrives (ib_wake.c), a doorbell or control call rings, or
 *             the next timer is due;
 *   inline    the application's own verbs calls run passes; the loop
 *             (unpinned) stays out of their way while they do, and takes
 *             over, as adaptive, once none has run for takeover_us. A
 *             target whose application sleeps in poll() still answers.
 *
 * A process runs one engine or several ([engine] engines): each owns the
 * QPs placed on it (ib_engine_place) and, on every device, a shard: its
 * own RX/TX queue pair on the port, run lists, transmit buffer and
 * counters. A frame that arrives on one engine's queue for another's QP
 * (a port without RSS, or RSS that hashed it elsewhere) is handed over
 * through the owner's ring, already validated.
 *
 * Control operations (modify/destroy) are handed to the loop through a
 * small ring and run between passes, so the transport state has one owner;
 * in inline mode they run under the pass lock instead. With several
 * engines they run while every engine is parked between two passes. A loop
 * asleep in epoll holds no pass lock (it holds it whenever it is awake):
 * a control call takes the lock and runs at once in the caller, rather
 * than waking the loop and waiting for it (engine_hold).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_epoll.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "ib_hca.h"

#define ENG_MAX_DEVS	16
#define ENG_NAP_MIN_US	10	/* first nap of a port that cannot wake us */
#define ENG_NAP_MAX_US	1000	/* and the longest: timers run this late */
#define ENG_IDLE_NAP_US	5000	/* ... when no timer runs: 0.5 % of a core */
#define ENG_TICK_US	100000	/* sleep bound of an idle engine on a link */
#define ENG_IDLE_PASSES	256	/* before an idle QP leaves the active list */
#define ENG_MANY_QPS	64	/* ... unless more than this many are on it */
#define ENG_HOT_STREAK	32	/* visits finding new WRs before a QP is hot */
#define ENG_HOT_IDLE_US	1000	/* a hot QP this idle cools (one look a ms) */
#define ENG_SWEEP_QPS	16	/* waiting QPs whose timers a pass looks at */
#define ENG_RX_BUDGET	(32 * IB_RX_BURST)	/* frames a pass takes in */
#define ENG_LOCK_SPINS	1000	/* pauses before a waiter yields its CPU */
#define ENG_STREAK	8	/* inline: looks that found calls driving */
#define ENG_TIME_EVERY	8	/* passes per timed one, a power of 2 */
#define ENG_POST_FULL	64	/* inline posts per full pass, a power of 2 */
#define ENG_POST_FLUSH	16	/* inline: queued frames a post flushes */
#define ENG_POST_FLUSH_SMALL 24	/* ... when the last is small: */
#define ENG_POST_SMALL	512	/* at most this many bytes */
#define ENG_POST_CLOCK	8	/* inline: posts per TSC reading (drive) */
#define ENG_POST_DEEP	4	/* inline: a post on a QP with this many WRs
				 * on the wire leaves its frame to the next
				 * flush (post_pass) */
#define ENG_TX_HOLD_US	3	/* inline: a poll leaves ACKs to a post
				 * this long at least (tx_settle) */
#define ENG_TX_HOLD_MAX_US 30	/* ... and at most */
#define ENG_LOOP_HOLD_US 100	/* inline: the loop's hold (loop_holds) */
#define ENG_DEFER_MAX_US 10000	/* ... and the longest nap after them: a
				 * program that stops calling is covered
				 * this late, once */
#define ENG_DEFER_STREAM_US 1000 /* ... while posts leave frames to a
				 * flush (post_pass) */
#define ENG_SPIN_MAX_US	256	/* the loop's spin, grown (engine_main) */
#define ENG_RT_RUN_US	100	/* a real-time loop's longest run (loop_rt) */
#define ENG_RT_NAP_US	100	/* ... its longest nap while calls drive */
#define ENG_RT_KEEP_US	100000	/* ... and how long it stays real-time
				 * with no work found */
#define ENG_ACTIVE_US	1000	/* inline: calls this recent make a program
				 * one that takes turns with the loop */

struct ib_ctl {
	void (*fn)(void *);
	void *arg;
	uint32_t done;
};

struct ib_engine {
	/* Shared with applications: doorbells read it, inline passes
	 * write app_tsc.
	 */
	uint32_t sleeping;	/* in epoll: a doorbell must write efd */
	uint64_t app_tsc;	/* inline: an application call's last pass */
	uint32_t deferred;	/* inline: a post left frames to a flush */
	uint32_t memif_armed;	/* asleep with a memif ring's interrupt on */

	/* The loop's own. */
	uint32_t id __rte_cache_aligned;
	unsigned int lcore;
	int looping;		/* engine_main runs on the lcore */
	uint32_t stop;
	rte_spinlock_t run;	/* one pass at a time (inline mode); an
				 * engine lcore's loop holds it while awake
				 */
	struct ib_shard *sh[ENG_MAX_DEVS];	/* its share of each device */
	uint32_t nsh;
	struct rte_ring *ctl;
	int rt;			/* inline: the loop runs SCHED_FIFO (loop_rt) */
	uint64_t rt_work;	/* TSC of the loop's last pass with work */
	int rt_denied;
	struct ib_place place;	/* inline: the loop's CPU (ib_place.c) */
	int epfd;
	int efd;		/* eventfd: doorbells, control calls, stop */
	int tfd;		/* timerfd: naps shorter than a millisecond */
	struct rte_epoll_event efd_ev, tfd_ev;
};

/* What the engines share: set once, at the first device's first QP. */
static struct {
	rte_spinlock_t lock;	/* launch and device lists: control path */
	int launched;
	int mode;		/* enum ib_engine_mode */
	int placement;		/* enum ib_placement */
	uint32_t n;		/* engines */
	uint32_t spin_us;
	uint32_t takeover_us;
	int loop_rt;		/* inline: the loop may run SCHED_FIFO */
	pthread_mutex_t world;	/* one caller at a time parks the engines */
} eng = {
	.lock = RTE_SPINLOCK_INITIALIZER,
	.world = PTHREAD_MUTEX_INITIALIZER,
};

static struct ib_engine engines[IB_MAX_ENGINES];

/* Set at the first device of an inline configuration. */
int ib_engine_inline;

/*
 * The pass lock's release: a store with release order, as C11 defines an
 * unlock (and DPDK's generic spinlock does); DPDK's x86 unlock is a locked
 * exchange, which makes every inline pass wait for its store buffer.
 */
static inline void
run_unlock(struct ib_engine *e)
{
	ib_unlock(&e->run);
}

__thread uint32_t ib_self __attribute__((tls_model("initial-exec")));
__thread uint64_t ib_lcore_seen __attribute__((tls_model("initial-exec")));

/* Inline: the CQ whose poll drives this thread's pass (NULL otherwise). */
static __thread struct ib_cq *poll_cq __attribute__((tls_model("initial-exec")));
/* Inline mode: the loop's passes hold ACKs that complete a request, as
 * polls do, while the program's calls are at most ENG_ACTIVE_US old
 * (tx_settle).
 */
static __thread int loop_holds __attribute__((tls_model("initial-exec")));

static void
ring_efd(struct ib_engine *e)
{
	static const uint64_t one = 1;

	if (write(e->efd, &one, sizeof(one)) != sizeof(one))
		IB_LOG(DEBUG, "engine eventfd: %s", strerror(errno));
}

/*
 * After publishing work (a doorbell or control entry in a ring). The full
 * fence orders that store before the load of `sleeping`; engine_sleep does
 * the mirror image (store `sleeping`, then look at the rings). Without it
 * the CPU may satisfy the load first (x86 reorders a store with a later
 * load): the engine then finds the rings empty, this side finds it awake,
 * and the work waits for the next timer or forever.
 */
static void
engine_wake_fenced(struct ib_engine *e)
{
	if (__atomic_load_n(&e->sleeping, __ATOMIC_SEQ_CST))
		ring_efd(e);
}

static void
engine_wake(struct ib_engine *e)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	engine_wake_fenced(e);
}

/* Another engine handed this one frames: it must not sleep on them. */
void
ib_engine_nudge(struct ib_engine *e)
{
	engine_wake(e);
}

void
ib_engine_activate(struct ib_qp *qp)
{
	struct ib_shard *sh = qp->sh;

	if (qp->active == IB_QP_ACTIVE)
		return;
	if (qp->active == IB_QP_WAITING)
		TAILQ_REMOVE(&sh->waiting, qp, next);
	qp->active = IB_QP_ACTIVE;
	TAILQ_INSERT_TAIL(&sh->active, qp, next);
	sh->nactive++;
}

/*
 * Hot QPs: a post pays no fence. A poster publishes its WRs and then
 * looks at db_armed and the loop's `sleeping`; the loop clears db_armed
 * (park) or sets `sleeping` and then looks at the WRs. With a full fence
 * on both sides one of them sees the other (Dekker). The poster's fence
 * waits for its stores to reach the cache, lines the engine last read:
 * 40 % of the posting thread's time in dpib-perf's 64 B WRITE stream
 * (perf, engine lcore mode), and the stream ran 26-28 % faster without it
 * (unsafely).
 *
 * So a QP that streams (ENG_HOT_STREAK visits that found new WRs) turns
 * hot: the engine keeps it on the active list and visits it every pass,
 * and its posts skip the fence and the rest. To let it go again (idle
 * ENG_HOT_IDLE_US, before the loop sleeps, at destruction) the engine
 * clears db_hot and then issues membarrier(PRIVATE_EXPEDITED), which
 * makes every running thread of the process execute a full barrier: a
 * post whose WRs were published before that barrier is seen by the
 * engine's next look; one after it sees db_hot clear and takes the fenced
 * path. membarrier costs 12 us here when another CPU runs a thread of the
 * process (an IPI in a VM), so it comes at most once a ms, or once when a
 * loop that had hot QPs goes to sleep. Not in inline mode (posts take the
 * pass lock there), nor where membarrier is missing or DPIB_ASYM_FENCE=off.
 */
static int asym_fence;
int ib_membarrier;	/* registered: hot QPs, the SQ lock's bias */

static void
asym_init(void)
{
	const char *v = getenv("DPIB_ASYM_FENCE");
	long q;

	if (v != NULL && strcmp(v, "off") == 0)
		return;
	q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
	    syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		    0, 0) != 0) {
		IB_LOG(INFO, "membarrier: %s: every post fences and locks",
		       strerror(errno));
		return;
	}
	ib_membarrier = 1;
	asym_fence = !ib_engine_inline;
}

/* Every running thread of the process executes a full barrier. */
void
ib_heavy_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
		IB_LOG(ERR, "membarrier: %s", strerror(errno));	/* registered */
}

static void
heavy_fence(struct ib_shard *sh)
{
	ib_heavy_fence();
	sh->cnt[IB_CNT_HEAVY_FENCE]++;
}

/*
 * A QP on the active list with work at TSC @now: hot once it has streamed
 * a while. Never while the loop is going to sleep (its last look), which
 * it does only with no QP hot.
 */
static inline void
hot_consider(struct ib_shard *sh, struct ib_qp *qp, uint64_t now)
{
	uint32_t prod = __atomic_load_n(&qp->sq.prod, __ATOMIC_RELAXED);

	if (prod == qp->hot_prod)
		return;
	qp->hot_prod = prod;
	if (++qp->hot_streak < ENG_HOT_STREAK || sh->nhot == IB_HOT_MAX ||
	    !asym_fence || sh->eng == NULL ||
	    __atomic_load_n(&sh->eng->sleeping, __ATOMIC_RELAXED))
		return;
	qp->hot_work = now;
	sh->cnt[IB_CNT_QP_HOT]++;
	sh->hot[sh->nhot++] = qp;
	__atomic_store_n(&qp->db_hot, 1, __ATOMIC_RELAXED);
}

/* Off the shard's hot list; the caller fences (or the QP is going). */
static void
hot_drop(struct ib_shard *sh, struct ib_qp *qp)
{
	uint32_t i;

	__atomic_store_n(&qp->db_hot, 0, __ATOMIC_RELAXED);
	qp->hot_streak = 0;
	for (i = 0; i < sh->nhot; i++)
		if (sh->hot[i] == qp) {
			sh->hot[i] = sh->hot[--sh->nhot];
			return;
		}
}

/*
 * Cool the shard's hot QPs idle since @idle_before (all with UINT64_MAX);
 * how many. The caller fences once (heavy_fence) for all it cooled. They
 * stay on the active list: parking is the next pass's business, on the
 * fenced protocol.
 */
static uint32_t
hot_cool(struct ib_shard *sh, uint64_t idle_before)
{
	uint32_t i = 0, n = 0;

	while (i < sh->nhot) {
		struct ib_qp *qp = sh->hot[i];

		if (qp->hot_work >= idle_before) {
			i++;
			continue;
		}
		hot_drop(sh, qp);	/* moves the last one to i */
		n++;
	}
	return n;
}

/* Off the engine's lists (the QP is being destroyed). */
void
ib_engine_forget(struct ib_qp *qp)
{
	struct ib_shard *sh = qp->sh;

	if (qp->active == IB_QP_ACTIVE) {
		TAILQ_REMOVE(&sh->active, qp, next);
		sh->nactive--;
	} else if (qp->active == IB_QP_WAITING) {
		TAILQ_REMOVE(&sh->waiting, qp, next);
	}
	qp->active = IB_QP_IDLE;
	if (qp->db_hot)
		hot_drop(sh, qp);
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
	/* Hot: the engine is awake and visits the QP every pass until it
	 * has cleared db_hot and made every thread of the process pass a
	 * full barrier (heavy_fence): this post is then visible to its
	 * next look, fence or not.
	 */
	if (__atomic_load_n(&qp->db_hot, __ATOMIC_RELAXED))
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&qp->db_armed, __ATOMIC_RELAXED)) {
		/* On the active list, but the loop may sleep meanwhile (the
		 * QP waits for an ACK): wake it. In inline mode too: the
		 * poster runs one pass, and what follows it (the answer, the
		 * ACK) is the loop's if the program next waits in the kernel.
		 * The fence above already ordered the post before this load.
		 */
		engine_wake_fenced(qp->sh->eng);
		return;
	}
	if (__atomic_exchange_n(&qp->db_armed, 1, __ATOMIC_SEQ_CST) == 0) {
		/* The QPN, not the pointer: a QP destroyed while its doorbell
		 * waits is then simply not found.
		 */
		while (rte_ring_mp_enqueue(qp->sh->db_ring,
					   (void *)(uintptr_t)qp->ibv.qp_num) != 0)
			rte_pause();	/* the ring holds one entry per QP */
		engine_wake(qp->sh->eng);
	}
}

/*
 * Engine: the QP leaves the active list for the waiting list (it waits for
 * ACKs or a timer) or for none, unless work arrived meanwhile: its poster
 * finds db_armed clear from now on and rings, or this sees the new WQE.
 */
static void
park(struct ib_shard *sh, struct ib_qp *qp)
{
	TAILQ_REMOVE(&sh->active, qp, next);
	sh->nactive--;
	qp->idle_passes = 0;
	qp->hot_streak = 0;
	if (ib_qp_busy(qp)) {
		qp->active = IB_QP_WAITING;
		TAILQ_INSERT_TAIL(&sh->waiting, qp, next);
	} else {
		qp->active = IB_QP_IDLE;
	}
	__atomic_store_n(&qp->db_armed, 0, __ATOMIC_SEQ_CST);
	if (ib_qp_runnable(qp) &&
	    __atomic_exchange_n(&qp->db_armed, 1, __ATOMIC_SEQ_CST) == 0)
		ib_engine_activate(qp);
}

/*
 * The transmit queue filled during a pass (the port took less than the
 * QPs had to send): those after that point got nothing. The next pass
 * starts with them, the ones served going to the end, so that a port
 * that is the bottleneck is shared round the QPs. In a fixed order the
 * first ones took it all: 64 QPs with 128 READs of 1 MiB outstanding
 * each (perftest ib_read_bw -s 1048576 -q 64 over memif), the responder
 * served the first dozen a pass for seconds while the requesters of the
 * others timed out and asked again (150-180 expiries a run, some runs
 * RETRY_EXC_ERR).
 */
static void
rotate_to(struct ib_shard *sh, struct ib_qp *first)
{
	struct ib_qp *q;

	while ((q = TAILQ_FIRST(&sh->active)) != first && q != NULL) {
		TAILQ_REMOVE(&sh->active, q, next);
		TAILQ_INSERT_TAIL(&sh->active, q, next);
	}
}

/*
 * A few waiting QPs a pass, round their list: their transport and RNR
 * timers. One that can send again goes back to the active list; one with
 * nothing outstanding any more leaves the lists. Each at most once a pass:
 * the list has gone round when the first one put back comes up again (a
 * lone waiting QP was looked at ENG_SWEEP_QPS times a pass).
 */
static void
sweep(struct ib_shard *sh, uint64_t now)
{
	struct ib_qp *qp, *again = NULL;
	uint32_t i;

	for (i = 0; i < ENG_SWEEP_QPS; i++) {
		qp = TAILQ_FIRST(&sh->waiting);
		if (qp == NULL || qp == again)
			return;
		TAILQ_REMOVE(&sh->waiting, qp, next);
		qp->active = IB_QP_IDLE;
		ib_comp_timer(qp, now);
		ib_req_run(qp);		/* an RNR wait that ended */
		/* db_armed is clear since park(): a post from now on rings. */
		if (ib_qp_runnable(qp)) {
			ib_engine_activate(qp);
		} else if (ib_qp_busy(qp)) {
			qp->active = IB_QP_WAITING;
			TAILQ_INSERT_TAIL(&sh->waiting, qp, next);
			if (again == NULL)
				again = qp;
		}
	}
}

static unsigned int
run_ctl(struct ib_engine *e)
{
	struct ib_ctl *c;
	unsigned int n = 0;

	if (e->ctl == NULL)
		return 0;
	while (rte_ring_sc_dequeue(e->ctl, (void **)&c) == 0) {
		c->fn(c->arg);
		__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
		n++;
	}
	if (n != 0 && e->nsh != 0)
		e->sh[0]->cnt[IB_CNT_CTL_QUEUED] += n;
	return n;
}

/* Frames other engines took in for this shard's QPs. */
static unsigned int
take_handoffs(struct ib_shard *sh)
{
	struct rte_mbuf *pkts[IB_RX_BURST];
	unsigned int i, n;

	if (sh->handoff == NULL || rte_ring_empty(sh->handoff))
		return 0;
	n = rte_ring_sc_dequeue_burst(sh->handoff, (void **)pkts, IB_RX_BURST,
				      NULL);
	for (i = 0; i < n; i++)
		ib_rx_handed(sh->dev, pkts[i]);
	ib_resp_flush_acks(sh->dev);
	return n;
}

static void
reverse(struct rte_mbuf **a, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n / 2; i++) {
		struct rte_mbuf *t = a[i];

		a[i] = a[n - 1 - i];
		a[n - 1 - i] = t;
	}
}

/* An RC ACK (or NAK) frame as ib_tx queues it (l2_len, l3_len set). */
static int
is_ack(const struct rte_mbuf *m)
{
	const uint8_t *bth = rte_pktmbuf_mtod_offset(m, const uint8_t *,
					m->l2_len + m->l3_len + UDP_LEN);

	return bth[0] == IB_RC_ACKNOWLEDGE;
}

/* The first @n frames queued are ACKs, and none a port refused before. */
static int
acks_first(const struct ib_shard *sh, uint32_t n)
{
	uint32_t i;

	if (sh->tx_clean != 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!is_ack(sh->tx_pending[i]))
			return 0;
	return 1;
}

/*
 * Held frames leave after the ones queued since (the program's answer,
 * which the peer waits for) when they are all ACKs: ACKs and requests are
 * independent streams, and an ACK overtaken by a later one of its QP is a
 * duplicate, which the requester ignores. Anything else keeps its order
 * (the frames of one message or response must), and so does a queue that
 * frames a port refused earlier head.
 */
static void
held_last(struct ib_shard *sh)
{
	uint32_t h = sh->tx_held, n = sh->tx_n;

	if (h == 0 || h >= n || !acks_first(sh, h))
		return;
	reverse(sh->tx_pending, h);
	reverse(sh->tx_pending + h, n - h);
	reverse(sh->tx_pending, n);
}

/*
 * The end of a pass: hand what it queued to the port, or hold it. In
 * inline mode a poll's pass that completed work on the polled CQ, or that
 * queued nothing but ACKs (a WRITE's: its target sees no completion),
 * leaves its frames to the program's next post for up to two round trips
 * of the last RTT sample (ENG_TX_HOLD_US .. ENG_TX_HOLD_MAX_US: on a veth
 * link the answer's frames, which the kernel delivers one by one, take
 * longer than 3 µs often enough to matter),
 * and pure ACKs then leave behind the post's frames: the peer, still
 * polling for its own completion, takes the answer (a ping-pong's reply,
 * a latency test's WRITE) in that same call, and does not need its engine
 * loop to take over. Polls meanwhile leave them too; a post, the loop or
 * the first poll after the hold sends them, so a stream's ACKs leave at
 * least every ENG_TX_HOLD_MAX_US. The loop's passes hold pure ACKs too
 * while the program's calls are recent (loop_holds): a program spinning
 * on its memory for a WRITE that the loop took in answers it next, and
 * its peer, still polling, takes the answer before the ACK (memif
 * ib_write_lat -s 65536, typical 290 -> 16 us together with the other
 * changes of that commit). Only ACKs that complete a request at the peer
 * (tx_ack_end: one covers a message's last packet) start a hold; the
 * mid-message ones of a long WRITE leave at once, so that they open the
 * peer's window and do not start the hold's clock before the message has
 * even arrived. ACKs that polls queue during the hold
 * join the held ones while nothing else is queued: a multi-packet
 * answer's AckReq packets draw an ACK each (one mid-message, one for the
 * last), and the last one, which completes the peer's request, must not
 * lead the post's frames (ib_write_lat -s 16384 over veth: the peer's
 * poll returned before the reply's data had come, and its loop had to
 * take over; typical 21-30 -> 11 us).
 */
static void
tx_settle(struct ib_shard *sh, uint64_t now, uint32_t polled)
{
	int holds = poll_cq != NULL ||
		    (loop_holds && sh->tx_ack_end && acks_first(sh, sh->tx_n));

	if (!holds || (sh->tx_hold != 0 && now >= sh->tx_hold)) {
		if (sh->tx_hold != 0)
			held_last(sh);
		ib_tx_flush(sh->dev);
		sh->tx_hold = 0;
	} else if (sh->tx_hold == 0) {
		if (sh->tx_n != 0 &&
		    ((poll_cq != NULL &&
		      __atomic_load_n(&poll_cq->q.prod, __ATOMIC_RELAXED) !=
		      polled) ||
		     (sh->tx_ack_end && acks_first(sh, sh->tx_n)))) {
			uint64_t us = rte_get_tsc_hz() / 1000000;

			sh->tx_hold = now + (poll_cq == NULL ?
				ENG_LOOP_HOLD_US * us :
				RTE_MIN(RTE_MAX(2 * sh->rtt_hint,
						ENG_TX_HOLD_US * us),
					ENG_TX_HOLD_MAX_US * us));
			sh->tx_held = sh->tx_n;
		} else {
			ib_tx_flush(sh->dev);
		}
	} else if (sh->tx_held < sh->tx_n && acks_first(sh, sh->tx_n)) {
		sh->tx_held = sh->tx_n;
	}
}

/*
 * A burst of frames that did not come from the port: those the device sent
 * to itself (the shard's loopback ring) or that a test injected.
 */
static unsigned int
rx_ring(struct ib_dev *dev, struct rte_ring *r)
{
	struct rte_mbuf *pkts[IB_RX_BURST];
	unsigned int n;

	n = rte_ring_sc_dequeue_burst(r, (void **)pkts, IB_RX_BURST, NULL);
	ib_rx_burst(dev, pkts, n);
	ib_resp_flush_acks(dev);
	return n;
}

/* The QPs whose posters rang since: onto the active list. */
static unsigned int
take_doorbells(struct ib_shard *sh)
{
	void *qpns[IB_RX_BURST];
	struct ib_qp *qp;
	unsigned int i, n;

	n = rte_ring_sc_dequeue_burst(sh->db_ring, qpns, IB_RX_BURST, NULL);
	for (i = 0; i < n; i++) {
		qp = sh->dev->qp_tbl[(uintptr_t)qpns[i]];
		if (qp != NULL && qp->sh == sh)
			ib_engine_activate(qp);
	}
	return n;
}

/*
 * Is this pass one of the timed ones? Reading the TSC twice more in every
 * pass costs a one-message pass (a ping-pong's) 5 % of its time, so the
 * cycle counters time a random pass in ENG_TIME_EVERY (xorshift: any
 * rhythm the passes fall into is not sampled in step) and count it that
 * many times: an unbiased estimate, exact enough over the thousands of
 * passes a figure spans.
 */
static inline int
pass_sampled(struct ib_shard *sh)
{
	uint32_t x = sh->pass_rand;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	sh->pass_rand = x;
	return (x & (ENG_TIME_EVERY - 1)) == 0;
}

/*
 * One pass over the engine's share of a device, begun at TSC @t0; returns
 * how much work it did: frames received and queued, doorbells taken. A QP
 * that only waits (for an ACK, a timer, a port that takes nothing) is not
 * work: the loop may then sleep.
 */
static unsigned int
shard_pass(struct ib_shard *sh, uint64_t t0)
{
	struct ib_dev *dev = sh->dev;
	struct rte_mbuf *pkts[IB_RX_BURST];
	struct ib_qp *qp, *tmp, *resume = NULL;
	int state;
	unsigned int n, work;
	uint64_t now, queued = sh->tx_queued;
	uint32_t polled = poll_cq != NULL ? poll_cq->q.prod : 0;
	int timed = pass_sampled(sh);

	sh->now = t0;
	sh->pass_id++;
	sh->post_streak = 0;

	if (sh->id == 0)
		ib_neigh_timer(dev, t0);
	/* More than a burst when the port has it: a pass that visits many
	 * QPs must not take in only a burst's worth of what they wait for.
	 */
	work = 0;
	sh->loop_unread = 0;	/* the bursts below take what it sent */
	do {
		n = rte_eth_rx_burst(dev->port_id, sh->queue, pkts,
				     IB_RX_BURST);
		ib_rx_burst(dev, pkts, n);
		ib_resp_flush_acks(dev);
		work += n;
	} while (n == IB_RX_BURST && work < ENG_RX_BUDGET);
	if (n == IB_RX_BURST)	/* the budget left some */
		sh->loop_unread |= dev->conf.loopback;
	work += take_handoffs(sh);
	if (unlikely(!rte_ring_empty(sh->self))) {
		work += rx_ring(dev, sh->self);
		sh->loop_unread |= !rte_ring_empty(sh->self);
	}
	if (unlikely(sh->id == 0 && !rte_ring_empty(dev->inject)))
		work += rx_ring(dev, dev->inject);

	work += take_doorbells(sh);

	/* TSC spent per phase, in passes that did something (cycles per
	 * message: dpib-perf). Receiving is the responder's requests and
	 * the completer's ACKs; sending the requester's packets.
	 */
	now = t0;
	if (timed && work != 0) {
		now = rte_rdtsc();
		sh->cnt[IB_CNT_CYCLES_RECEIVE] += (now - t0) * ENG_TIME_EVERY;
		sh->now = now;
	}
	for (qp = TAILQ_FIRST(&sh->active); qp != NULL; qp = tmp) {
		tmp = TAILQ_NEXT(qp, next);
		if (tmp != NULL)
			ib_qp_prefetch(tmp);	/* while this one runs */
		state = __atomic_load_n(&qp->attr.qp_state, __ATOMIC_ACQUIRE);
		if (state == IBV_QPS_ERR)
			ib_qp_flush(qp);
		else if (state == IBV_QPS_SQE)
			ib_qp_to_sqe(qp);	/* WRs posted meanwhile flush */
		ib_resp_run(qp);
		ib_req_run(qp);
		ib_comp_timer(qp, now);
		/* A QP with nothing to send stays a little while, so that a
		 * steady poster does not pay a doorbell per WR; not long when
		 * many are active, since every pass visits them all.
		 */
		if (ib_qp_runnable(qp)) {
			qp->idle_passes = 0;
			if (qp->db_hot)
				qp->hot_work = now;
			else
				hot_consider(sh, qp, now);
		} else if (++qp->idle_passes >= (sh->nactive > ENG_MANY_QPS ?
						 2u : ENG_IDLE_PASSES) &&
			   !qp->db_hot) {
			park(sh, qp);
		}
		if (unlikely(resume == NULL && tmp != NULL &&
			     ib_tx_room_req(dev) < 1))
			resume = tmp;
	}
	if (unlikely(resume != NULL) && resume->active == IB_QP_ACTIVE)
		rotate_to(sh, resume);
	if (!TAILQ_EMPTY(&sh->waiting))
		sweep(sh, now);
	if (unlikely(sh->nhot != 0) && now >= sh->hot_next) {
		uint64_t idle = rte_get_tsc_hz() / 1000000 * ENG_HOT_IDLE_US;

		sh->hot_next = now + idle;
		if (hot_cool(sh, now - idle) != 0)
			heavy_fence(sh);
	}
	tx_settle(sh, now, polled);
	sh->now = 0;
	if (timed && sh->tx_queued != queued)
		sh->cnt[IB_CNT_CYCLES_SEND] += (rte_rdtsc() - now) *
					       ENG_TIME_EVERY;
	/* Frames it sent itself (a loopback port's RX queue, its `self`
	 * ring) are work for the next pass, even those a hold queued in an
	 * earlier one.
	 */
	return work + (unsigned int)(sh->tx_queued - queued) +
	       (sh->id == 0 ? ib_fault_pending(dev) : 0) + sh->loop_unread;
}

/* One pass over every shard of the engine (the caller may run them). */
static unsigned int
passes(struct ib_engine *e, uint64_t t0)
{
	unsigned int work = 0;
	uint32_t i;

	for (i = 0; i < e->nsh; i++)
		work += shard_pass(e->sh[i], i == 0 ? t0 : rte_rdtsc());
	return work;
}

/* The loop's pass; in inline mode only when no application call runs one. */
static unsigned int
loop_pass(struct ib_engine *e)
{
	unsigned int work;
	uint64_t now;

	if (eng.mode != IB_ENGINE_INLINE)
		return run_ctl(e) + passes(e, rte_rdtsc());
	if (!rte_spinlock_trylock(&e->run))
		return 1;	/* an application call is driving */
	now = rte_rdtsc();
	loop_holds = now - __atomic_load_n(&e->app_tsc, __ATOMIC_RELAXED) <
		     rte_get_tsc_hz() / 1000000 * ENG_ACTIVE_US;
	work = passes(e, now);
	run_unlock(e);
	return work;
}

/* Frames an engine's shards sent themselves, not yet received. */
static inline int
loop_unread(const struct ib_engine *e)
{
	uint32_t i, n = 0;

	for (i = 0; i < e->nsh; i++)
		n |= e->sh[i]->loop_unread;
	return n != 0;
}

/* Anything due without a frame or a doorbell: transport timers, TX. */
static int
timers_pending(struct ib_engine *e)
{
	struct ib_qp *qp;
	uint32_t i;

	for (i = 0; i < e->nsh; i++) {
		struct ib_shard *sh = e->sh[i];

		if (sh->tx_n != 0 || sh->loop_unread ||
		    !TAILQ_EMPTY(&sh->waiting) ||
		    (sh->id == 0 && ib_fault_pending(sh->dev)) ||
		    (sh->handoff != NULL && !rte_ring_empty(sh->handoff)) ||
		    (sh->self != NULL && !rte_ring_empty(sh->self)))
			return 1;
		TAILQ_FOREACH(qp, &sh->active, next)
			if (ib_qp_busy(qp))
				return 1;
	}
	return 0;
}

/*
 * How long to sleep (µs; -1: until woken). Pending timers, and a port that
 * cannot wake the engine, get naps that lengthen with the idle time, from
 * ENG_NAP_MIN_US to ENG_NAP_MAX_US (timers) or ENG_IDLE_NAP_US (the port):
 * prompt after traffic, cheap when it stays away.
 */
static int64_t
nap_us(uint64_t idle_us, uint64_t max_us)
{
	return (int64_t)RTE_MIN(RTE_MAX(idle_us / 8, (uint64_t)ENG_NAP_MIN_US),
				max_us);
}

static int64_t
sleep_bound(struct ib_engine *e, uint64_t idle_us)
{
	uint64_t now = rte_rdtsc(), due, us = rte_get_tsc_hz() / 1000000;
	int64_t t = -1;
	uint32_t i;

	if (timers_pending(e))
		return nap_us(idle_us, ENG_NAP_MAX_US);
	for (i = 0; i < e->nsh; i++) {
		struct ib_shard *sh = e->sh[i];

		if (sh->dev->conf.loopback)
			continue;	/* only doorbells bring it work */
		if (!ib_wake_armed(sh))
			return nap_us(idle_us, ENG_IDLE_NAP_US);
		if (t < 0)
			t = ENG_TICK_US;
		due = sh->id == 0 ? ib_neigh_next_due(sh->dev) : UINT64_MAX;
		if (due != UINT64_MAX)
			t = RTE_MIN(t, due > now ? (int64_t)((due - now) / us) + 1
						 : 1);
	}
	return t;
}

static void
arm_timer(struct ib_engine *e, int64_t us)
{
	struct itimerspec its = { 0 };

	its.it_value.tv_sec = us / 1000000;
	its.it_value.tv_nsec = (us % 1000000) * 1000;
	if (timerfd_settime(e->tfd, 0, &its, NULL) != 0)
		IB_LOG(DEBUG, "engine timerfd: %s", strerror(errno));
}

static void
drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

/*
 * An engine lcore's loop, awake again: back to holding its pass lock,
 * which a control call may hold for a moment (engine_hold). A holder
 * preempted on a busy CPU is not spun against for long.
 */
static void
loop_relock(struct ib_engine *e)
{
	uint32_t tries = 0;

	while (!rte_spinlock_trylock(&e->run)) {
		if (++tries < ENG_LOCK_SPINS)
			rte_pause();
		else
			sched_yield();
	}
}

/*
 * Arm (@on) or disarm the shards' wake-ups. Under the pass lock, which an
 * engine lcore's loop holds whenever it is awake and an inline loop takes
 * here: a memif wake-up writes into the port's shared ring, and the PMD
 * unmaps that only once the engine let go of it (ib_engine_unmap_fence).
 *
 * An inline loop arms a memif ring's interrupt only once no call has
 * driven the engine for ENG_DEFER_MAX_US (a target asleep in poll(): READs
 * after 20 ms idle, passive_target idle, median 450-680 -> 115-175 us).
 * While the program calls now and then, the loop takes turns with it and
 * naps as before: woken by the peer's transmit instead, it queued on the
 * waker's busy CPU (qperf rc_rdma_write_poll_lat, two programs spinning on
 * two CPUs, 190-310 -> 450-990 us).
 */
static void
wake_set(struct ib_engine *e, int on)
{
	uint64_t us = rte_get_tsc_hz() / 1000000;
	int memif = !ib_engine_inline ||
		    rte_rdtsc() - __atomic_load_n(&e->app_tsc,
						  __ATOMIC_RELAXED) >=
		    ENG_DEFER_MAX_US * us;
	int locked = 0;
	uint32_t i;

	/* An inline loop locks only for a memif ring: to arm one, if no
	 * call is inside a pass (then the program drives anyway), and to
	 * disarm one it armed.
	 */
	for (i = 0; ib_engine_inline && !locked && i < e->nsh; i++) {
		const struct ib_wake *w = &e->sh[i]->wake;

		if (w->kind != IB_WAKE_MEMIF)
			continue;
		if (on && memif) {
			locked = rte_spinlock_trylock(&e->run);
			memif = locked;
		} else if (!on && w->memif_flags != NULL) {
			loop_relock(e);
			locked = 1;
		}
	}
	for (i = 0; i < e->nsh; i++) {
		if (on)
			ib_wake_arm(e->sh[i], memif);
		else
			ib_wake_disarm(e->sh[i]);
		if (on && e->sh[i]->wake.memif_flags != NULL)
			__atomic_store_n(&e->memif_armed, 1,
					 __ATOMIC_RELAXED);
	}
	if (!on)
		__atomic_store_n(&e->memif_armed, 0, __ATOMIC_RELAXED);
	if (locked)
		run_unlock(e);
}

/*
 * Sleep until a frame, a doorbell, a control call or the next timer.
 * `sleeping` and the wake-ups are armed before the last look at the
 * rings and ports: whatever arrives after that look wakes the sleep.
 */
static unsigned int
engine_sleep(struct ib_engine *e, uint64_t idle_us)
{
	struct rte_epoll_event ev[ENG_MAX_DEVS + 2];
	unsigned int work;
	int64_t t;
	uint32_t cooled = 0;
	int i, n;

	__atomic_store_n(&e->sleeping, 1, __ATOMIC_SEQ_CST);
	/* No QP stays hot across the sleep: its posts would not wake it.
	 * One fence for every shard's.
	 */
	for (i = 0; i < (int)e->nsh; i++)
		if (e->sh[i]->nhot != 0)
			cooled += hot_cool(e->sh[i], UINT64_MAX);
	if (cooled != 0)
		heavy_fence(e->sh[0]);
	wake_set(e, 1);
	work = loop_pass(e);
	if (work == 0 && !__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
		/* Whole milliseconds are epoll's own timeout; a shorter nap
		 * takes the timerfd (two more calls).
		 */
		t = sleep_bound(e, idle_us);
		if (t > 0 && t < 1000)
			arm_timer(e, t);
		if (!ib_engine_inline)
			run_unlock(e);	/* control calls run meanwhile */
		n = rte_epoll_wait(e->epfd, ev, RTE_DIM(ev),
				   t < 0 ? -1 : t < 1000 ? (t == 0 ? 0 : -1) :
				   (int)(t / 1000));
		for (i = 0; i < n; i++) {
			struct ib_shard *sh = ev[i].epdata.data;

			if (sh != NULL && (void *)sh != e &&
			    sh->wake.kind == IB_WAKE_MEMIF)
				sh->cnt[IB_CNT_MEMIF_INTR]++;
		}
		/* Awake: from here a control call queues for the loop
		 * instead of taking the pass lock (engine_hold), or callers
		 * back to back would keep the loop from it for good.
		 */
		__atomic_store_n(&e->sleeping, 0, __ATOMIC_SEQ_CST);
		if (!ib_engine_inline)
			loop_relock(e);
		/* What woke the loop first, the bookkeeping after. */
		work = loop_pass(e);
		if (t > 0 && t < 1000)
			arm_timer(e, 0);
	}
	__atomic_store_n(&e->sleeping, 0, __ATOMIC_SEQ_CST);
	wake_set(e, 0);
	drain(e->efd);
	drain(e->tfd);
	return work;
}

/*
 * Inline mode: while application calls drive the engine, how long the loop
 * naps before it looks again (µs). First until the moment the calls would
 * have stopped for takeover_us, so a program that drives in bursts (posts,
 * polls its completion, then waits on memory) is covered within about
 * takeover_us of its last call; a program that keeps driving through
 * ENG_STREAK looks is left alone for longer and longer, up to
 * ENG_DEFER_MAX_US: each look wakes a CPU the program is busy on.
 */
static uint64_t
defer_nap(uint64_t idle_us, uint32_t streak)
{
	if (streak <= ENG_STREAK)
		return eng.takeover_us - idle_us + 1;
	return RTE_MIN((uint64_t)eng.takeover_us << RTE_MIN(streak - ENG_STREAK,
							    16u),
		       (uint64_t)ENG_DEFER_MAX_US);
}

/*
 * The loop's spin after its last work, given that its last sleep (@slept
 * µs) ended in work: twice as long, up to ENG_SPIN_MAX_US, when the sleep
 * was short against the spin (traffic in bursts whose gaps outlast the
 * spin just so), back towards spin_us when it was long. Each sleep costs
 * whoever wakes the loop: the peer's transmit, on af_packet over veth,
 * runs the wake-up of this loop's thread, which under a hypervisor was a
 * quarter of a 64 KiB WRITE stream's sender CPU. Inline mode only, and
 * only while no call has driven the engine for ENG_DEFER_MAX_US: a target
 * that sleeps in poll() while its peer streams into it. A program that
 * calls now and then may be busy in between (polling its memory for a
 * 64 KiB WRITE in ib_write_lat): a loop spinning beside it took the CPU
 * it needed (that test's typical latency over memif 250 -> 500 us). An
 * adaptive loop is pinned and drives every QP: sharing a CPU with the
 * programs (two processes on two CPUs), a longer spin took their CPU
 * (ib_write_lat 140 -> 545 us).
 */
static uint64_t
spin_next(uint64_t spin, uint64_t slept, uint64_t calls_idle)
{
	if (eng.mode != IB_ENGINE_INLINE || calls_idle < ENG_DEFER_MAX_US)
		return eng.spin_us;
	if (slept < 4 * spin)
		return RTE_MIN(2 * spin, RTE_MAX((uint64_t)ENG_SPIN_MAX_US,
						 (uint64_t)eng.spin_us));
	return RTE_MAX(spin / 2, (uint64_t)eng.spin_us);
}

/*
 * Inline mode: while the program it serves takes turns with it - calls,
 * then spins outside verbs (ib_write_lat polls its buffer for the peer's
 * WRITE) while the loop takes in what it waits for - the loop may run
 * SCHED_FIFO at priority 1 (loop_priority = realtime; the default is
 * normal), so that a woken loop gets a CPU at once. As a normal thread it did not: on
 * two CPUs, with both programs of a two-process test spinning, the kernel
 * ran it only when a spinner's time slice ended, at the next scheduler
 * tick, 1-4 ms late (perf sched: its scheduling delays ended on 4 ms tick
 * boundaries; a shorter EEVDF slice through sched_setattr did not change
 * that). ib_write_lat -s 16384 over veth, 99.9th percentile 2.7 -> 0.2-0.4
 * ms; memif -s 4096 2.8 ms -> 84 us.
 *
 * Only then: the loop turns real-time when one of its passes finds work
 * while the program's calls are at most ENG_ACTIVE_US old, and back when
 * one finds work with the calls older (a target asleep in poll(), whose
 * loop does all the work beside the programs that need the CPUs too) or
 * after ENG_RT_RUN_US of passes since it last woke (a loop that took over
 * from a program that was only descheduled must not keep it off its CPU:
 * real-time from every takeover, perftest's 64 B WRITE stream over memif
 * lost 10-17 % of its rate). A loop that only naps beside calls costs the
 * program a wake-up per nap. Without the privilege (CAP_SYS_NICE or
 * RLIMIT_RTPRIO) the loop stays a normal thread and says so once.
 *
 * Not the default: a real-time loop's every wake-up preempts the program
 * at once, and with the 8-byte ping-pongs, which seldom need the loop, it
 * cost over veth (ib_write_lat -s 8, medians of 6 interleaved runs)
 * 2.75 -> 3.2 us typical and 4.2 -> 8 us on average.
 */
static void
loop_rt(struct ib_engine *e, int on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };
	int err;

	if (on == e->rt || !eng.loop_rt || e->rt_denied)
		return;
	err = pthread_setschedparam(pthread_self(),
				    on ? SCHED_FIFO : SCHED_OTHER, &sp);
	if (err == 0) {
		e->rt = on;
		return;
	}
	e->rt_denied = 1;
	IB_LOG(NOTICE, "engine %u: the loop stays a normal thread: "
	       "SCHED_FIFO: %s (loop_priority = realtime needs CAP_SYS_NICE "
	       "or RLIMIT_RTPRIO)", e->id, strerror(err));
}

/* Inline mode, a pass found work: is the loop's CPU shared? */
static inline void
place_look(struct ib_engine *e, uint64_t now)
{
	if (likely(!e->place.on || now < e->place.next))
		return;
	if (ib_place_look(&e->place, now) && e->nsh != 0)
		e->sh[0]->cnt[IB_CNT_LOOP_MOVES]++;
}

static int
engine_main(void *arg)
{
	struct ib_engine *e = arg;
	const uint64_t us = rte_get_tsc_hz() / 1000000;
	uint64_t last = rte_rdtsc(), now, idle = 0, app_tsc, nap, awake = last;
	uint64_t spin = eng.spin_us;
	uint32_t streak = 0, stream;
	unsigned int work;

	ib_self = e->id;
	if (!ib_engine_inline)
		loop_relock(e);	/* released only while asleep */
	/* Naps of a few µs must not become the default 50 µs slack. */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	if (eng.mode == IB_ENGINE_INLINE)
		ib_place_init(&e->place);
	while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
		if (eng.mode == IB_ENGINE_INLINE) {
			/* Since a call last drove the engine: its own clock
			 * (a counter of calls would say that calls came, not
			 * that they stopped, and a program that posts once
			 * and then waits on memory needs the loop soon).
			 */
			now = rte_rdtsc();
			app_tsc = __atomic_load_n(&e->app_tsc,
						  __ATOMIC_RELAXED);
			idle = now > app_tsc ? (now - app_tsc) / us : 0;
			/* A call inside a pass holds the lock: it may have
			 * been preempted, by this loop among others; spinning
			 * for the lock would keep it off the CPU.
			 */
			/* Posts that left frames to a flush (post_pass)
			 * keep the naps at most ENG_DEFER_STREAM_US: a
			 * program that then stops calling has them sent
			 * that soon, not ENG_DEFER_MAX_US late.
			 */
			stream = __atomic_load_n(&e->deferred,
						 __ATOMIC_RELAXED);
			if (stream)
				__atomic_store_n(&e->deferred, 0,
						 __ATOMIC_RELAXED);
			if (idle < eng.takeover_us ||
			    rte_spinlock_is_locked(&e->run)) {
				/* A call inside a pass: not before it can
				 * have ended (a real-time loop that looked
				 * every µs took the CPU from a 64 KiB post
				 * over memif again and again: 15 -> 190 us).
				 */
				nap = idle < eng.takeover_us ?
				      defer_nap(idle, ++streak) :
				      RTE_MAX(defer_nap(eng.takeover_us,
							++streak),
					      (uint64_t)eng.takeover_us);
				/* Serving a program that takes turns, the loop
				 * is needed the moment the program stops
				 * calling, and a nap hears no frame: a loop
				 * that had napped for 2.5 ms left a 16 KiB
				 * ib_write_lat over veth waiting that long.
				 */
				if (e->rt && now - e->rt_work >
					     (uint64_t)ENG_RT_KEEP_US * us)
					loop_rt(e, 0);
				else if (e->rt)
					nap = RTE_MIN(nap,
						      (uint64_t)ENG_RT_NAP_US);
				rte_delay_us_sleep(stream ? RTE_MIN(nap,
					(uint64_t)ENG_DEFER_STREAM_US) : nap);
				awake = rte_rdtsc();
				continue;
			}
			streak = 0;
		}
		if (loop_pass(e) != 0 || eng.mode == IB_ENGINE_POLL) {
			last = rte_rdtsc();
			if (eng.mode == IB_ENGINE_INLINE) {
				place_look(e, last);
				e->rt_work = last;
				loop_rt(e, idle < ENG_ACTIVE_US &&
					   last - awake < ENG_RT_RUN_US * us);
			}
			continue;
		}
		now = rte_rdtsc();
		/* Traffic the application's calls handled is traffic too: a
		 * port that cannot wake the loop gets short naps after it.
		 */
		if (eng.mode == IB_ENGINE_INLINE)
			last = RTE_MAX(last, RTE_MIN(now,
				__atomic_load_n(&e->app_tsc, __ATOMIC_RELAXED)));
		if (now - last < spin * us) {
			rte_pause();
			continue;
		}
		work = engine_sleep(e, (now - last) / us);
		awake = rte_rdtsc();
		if (work == 0)
			continue;
		last = awake;
		if (eng.mode == IB_ENGINE_INLINE)
			place_look(e, last);
		app_tsc = __atomic_load_n(&e->app_tsc, __ATOMIC_RELAXED);
		spin = spin_next(spin, (last - now) / us,
				 last > app_tsc ? (last - app_tsc) / us : 0);
	}
	loop_rt(e, 0);	/* the lcore thread outlives the loop */
	if (eng.mode == IB_ENGINE_INLINE)
		ib_place_fini(&e->place);
	else
		run_unlock(e);
	return 0;
}

static int
add_fd(struct ib_engine *e, int fd, struct rte_epoll_event *ev)
{
	ev->epdata.event = EPOLLIN;
	ev->epdata.data = e;
	return rte_epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, ev);
}

/* The engine's wake-up descriptors: its epoll set, eventfd and timerfd. */
static int
engine_fds(struct ib_engine *e)
{
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	e->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (e->epfd < 0 || e->efd < 0 || e->tfd < 0 ||
	    add_fd(e, e->efd, &e->efd_ev) != 0 ||
	    add_fd(e, e->tfd, &e->tfd_ev) != 0)
		return errno ? errno : EIO;
	return 0;
}

/*
 * An engine lcore's loop asleep in epoll (it holds its pass lock whenever
 * it is awake): a control call takes the lock and runs in the caller, as
 * it would between two of the loop's passes, instead of waking the loop
 * and waiting until it comes round. A loop that wakes meanwhile waits
 * for the lock (loop_relock). Each call cost a wake-up before: with one
 * engine in adaptive mode 54 us a modify_qp (0.4 us in inline mode), and
 * with two engines beside the program on 2 CPUs 10 ms (the engines'
 * park spun on both CPUs while the caller waited for one).
 */
static int
engine_hold(struct ib_engine *e)
{
	/* Callers: not inline mode. Only while the loop sleeps: one that
	 * woke and waits for the lock is owed it (test_shard's
	 * control_beside_sleep, a thread in a loop of modify_qp and
	 * dereg_mr beside two engines: a loop never got its lock back and
	 * the program's WRITEs never completed).
	 */
	if (!__atomic_load_n(&e->sleeping, __ATOMIC_SEQ_CST) ||
	    !rte_spinlock_trylock(&e->run))
		return 0;
	if (!__atomic_load_n(&e->sleeping, __ATOMIC_SEQ_CST)) {
		rte_spinlock_unlock(&e->run);
		return 0;
	}
	return 1;
}

/*
 * A control call ran in its caller, under engine @e's pass lock (inline
 * mode, or beside a sleeping loop): counter engine_ctl_direct, against
 * engine_ctl_queued for those a loop ran between its passes.
 */
static void
count_direct(struct ib_engine *e)
{
	if (e->nsh != 0)
		e->sh[0]->cnt[IB_CNT_CTL_DIRECT]++;
}

/* After engine_hold's call: the loop looks at what the call changed. */
static void
engine_release(struct ib_engine *e)
{
	rte_spinlock_unlock(&e->run);
	engine_wake(e);
}

/*
 * Run @fn on engine @e between two passes and wait for it. Before the
 * engine runs (or on the engine itself) it runs here directly; in inline
 * mode under the pass lock.
 */
static void
engine_call(struct ib_engine *e, void (*fn)(void *), void *arg)
{
	struct ib_ctl c = { .fn = fn, .arg = arg };
	uint64_t deadline;

	if (ib_engine_inline) {
		rte_spinlock_lock(&e->run);
		fn(arg);
		count_direct(e);
		rte_spinlock_unlock(&e->run);
		/* A loop asleep on what it had (a new shard, a QP moved to
		 * error) looks again.
		 */
		engine_wake(e);
		return;
	}
	if (!e->looping || rte_lcore_id() == e->lcore) {
		fn(arg);
		return;
	}
	if (engine_hold(e)) {
		uint32_t self = ib_self;

		ib_self = e->id;	/* on the engine's behalf */
		fn(arg);
		ib_self = self;
		count_direct(e);
		engine_release(e);
		return;
	}
	while (rte_ring_mp_enqueue(e->ctl, &c) != 0)
		sched_yield();
	engine_wake(e);
	deadline = rte_rdtsc() + 10 * rte_get_tsc_hz();
	while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE)) {
		if (rte_rdtsc() > deadline) {
			/* The engine is wedged; the caller's stack frame must
			 * stay valid, so keep waiting but say so once.
			 */
			IB_LOG(ERR, "engine %u did not answer within 10 s",
			       e->id);
			deadline = UINT64_MAX;
		}
		sched_yield();
	}
}

static void
engines_stop(uint32_t n)
{
	uint32_t k;

	for (k = 0; k < n; k++) {
		struct ib_engine *e = &engines[k];

		if (e->looping) {
			__atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
			ring_efd(e);
			rte_eal_wait_lcore(e->lcore);
			e->looping = 0;
		}
	}
}

/* Start the engines with the first QP of the first device. */
static int
engines_launch(const struct ib_dev_conf *c)
{
	uint32_t k;
	int err;

	eng.mode = c->engine_mode;
	eng.placement = c->placement;
	eng.n = RTE_MIN(RTE_MAX(c->engines, 1u), (uint32_t)IB_MAX_ENGINES);
	eng.spin_us = c->spin_us ? c->spin_us :
		      eng.mode == IB_ENGINE_INLINE ? IB_TAKEOVER_SPIN_US :
						     IB_ENGINE_SPIN_US;
	eng.takeover_us = c->takeover_us ? c->takeover_us : IB_TAKEOVER_US;
	eng.loop_rt = c->loop_rt;
	ib_engine_inline = eng.mode == IB_ENGINE_INLINE;
	for (k = 0; k < eng.n; k++) {
		struct ib_engine *e = &engines[k];
		char name[RTE_RING_NAMESIZE];

		e->id = k;
		e->lcore = (unsigned int)c->lcore + k;
		rte_spinlock_init(&e->run);
		err = engine_fds(e);
		if (err == 0 && !ib_engine_inline) {
			snprintf(name, sizeof(name), "ib_ctl%u", k);
			e->ctl = rte_ring_create(name, 64, SOCKET_ID_ANY,
						 RING_F_SC_DEQ);
			if (e->ctl == NULL)
				err = ENOMEM;
		}
		if (err != 0)
			goto fail;
	}
	if (!ib_membarrier)
		asym_init();
	eng.launched = 1;
	if (ib_engine_inline && eng.takeover_us == IB_TAKEOVER_NEVER)
		return 0;	/* only verbs calls run passes */
	for (k = 0; k < eng.n; k++) {
		if (rte_eal_remote_launch(engine_main, &engines[k],
					  engines[k].lcore) != 0) {
			IB_LOG(ERR, "engine %u: lcore %u is not free", k,
			       engines[k].lcore);
			err = EBUSY;
			goto fail;
		}
		engines[k].looping = 1;
	}
	return 0;
fail:
	engines_stop(eng.n);
	eng.launched = 0;
	ib_engine_inline = 0;
	return err;
}

static void
add_shard(void *arg)
{
	struct ib_shard *sh = arg;
	struct ib_engine *e = sh->eng;

	if (ib_wake_register(sh, e->epfd) != 0) {
		IB_LOG(NOTICE, "%s: receive wake-up not registered; the "
		       "engine naps instead", sh->dev->conf.name);
		sh->wake.kind = IB_WAKE_NONE;
	}
	e->sh[e->nsh++] = sh;
}

/*
 * Put the device's shards on their engines (with its first QP; the
 * engines start with the first device's).
 */
int
ib_engine_attach(struct ib_dev *dev)
{
	uint32_t k;
	int err = 0;

	rte_spinlock_lock(&eng.lock);
	if (dev->attached)
		goto out;
	if (!eng.launched) {
		err = engines_launch(&dev->conf);
		if (err != 0)
			goto out;
	}
	dev->nsh = RTE_MIN(dev->nsh, eng.n);
	for (k = 0; k < dev->nsh; k++)
		if (engines[k].nsh == ENG_MAX_DEVS) {
			err = ENOSPC;
			goto out;
		}
	for (k = 0; k < dev->nsh; k++) {
		dev->sh[k].eng = &engines[k];
		engine_call(&engines[k], add_shard, &dev->sh[k]);
	}
	dev->attached = 1;
out:
	rte_spinlock_unlock(&eng.lock);
	return err;
}

/*
 * Which engine a new QP goes to (control path, under dev->ctl_lock,
 * before the QP is published). IB_PLACE_CQ: its send CQ's engine, else
 * its receive CQ's, else the engine with the fewest QPs, so that a CQ's
 * completions come from one engine and a thread polling it drives that
 * engine; IB_PLACE_SPREAD: round the engines. A CQ or SRQ that QPs of
 * two engines use from now on is marked shared before either can run.
 */
void
ib_engine_place(struct ib_qp *qp)
{
	struct ib_dev *dev = qp->dev;
	struct ib_cq *cqs[2] = { qp->scq, qp->rcq };
	uint32_t k = 0, i;

	if (dev->nsh > 1 && eng.placement == IB_PLACE_SPREAD) {
		k = qp->ibv.qp_num % dev->nsh;
	} else if (dev->nsh > 1) {
		if (qp->scq->home != 0 && qp->scq->home <= dev->nsh)
			k = qp->scq->home - 1u;
		else if (qp->rcq->home != 0 && qp->rcq->home <= dev->nsh)
			k = qp->rcq->home - 1u;
		else
			for (i = 1; i < dev->nsh; i++)
				if (dev->sh[i].nqp < dev->sh[k].nqp)
					k = i;
	}
	qp->sh = &dev->sh[k];
	qp->sh->nqp++;
	for (i = 0; i < 2; i++) {
		if (cqs[i]->home == 0)
			cqs[i]->home = (uint8_t)(k + 1);
		cqs[i]->feeds |= (uint16_t)(1u << k);
		if (__builtin_popcount(cqs[i]->feeds) > 1)
			__atomic_store_n(&cqs[i]->shared, 1, __ATOMIC_SEQ_CST);
	}
	if (qp->srq != NULL) {
		qp->srq->feeds |= (uint16_t)(1u << k);
		if (__builtin_popcount(qp->srq->feeds) > 1)
			__atomic_store_n(&qp->srq->shared, 1, __ATOMIC_SEQ_CST);
	}
}

/*
 * Every engine parked between two passes (several engines, not inline):
 * each runs park_here from its control ring and waits for release.
 */
struct world {
	uint32_t arrived;
	uint32_t release;
	uint32_t left;
};

static void
park_here(void *arg)
{
	struct world *w = arg;
	uint32_t tries = 0;

	__atomic_fetch_add(&w->arrived, 1, __ATOMIC_ACQ_REL);
	/* Not a spin for as long as it takes: engines outnumbering the
	 * CPUs would keep the caller that releases them off every one.
	 */
	while (!__atomic_load_n(&w->release, __ATOMIC_ACQUIRE)) {
		if (++tries < ENG_LOCK_SPINS)
			rte_pause();
		else
			sched_yield();
	}
	__atomic_fetch_add(&w->left, 1, __ATOMIC_ACQ_REL);
}

static int
on_engine_lcore(void)
{
	uint32_t k;

	for (k = 0; k < eng.n; k++)
		if (engines[k].looping && rte_lcore_id() == engines[k].lcore)
			return 1;
	return 0;
}

static void
world_stopped(void (*fn)(void *), void *arg)
{
	struct ib_ctl c[IB_MAX_ENGINES];
	int held[IB_MAX_ENGINES];
	struct world w = { 0 };
	uint32_t k, n = 0;

	if (ib_engine_inline) {
		for (k = 0; k < eng.n; k++)
			rte_spinlock_lock(&engines[k].run);
		fn(arg);
		for (k = 0; k < eng.n; k++)
			count_direct(&engines[k]);
		for (k = eng.n; k-- > 0;) {
			rte_spinlock_unlock(&engines[k].run);
			engine_wake(&engines[k]);
		}
		return;
	}
	if (on_engine_lcore()) {
		fn(arg);	/* not from a pass: engines never call here */
		return;
	}
	/* Two callers parking the engines in different orders would each
	 * hold one engine the other waits for.
	 */
	pthread_mutex_lock(&eng.world);
	for (k = 0; k < eng.n; k++) {
		held[k] = engines[k].looping && engine_hold(&engines[k]);
		if (!engines[k].looping || held[k])
			continue;	/* asleep: held still by its lock */
		c[k] = (struct ib_ctl){ .fn = park_here, .arg = &w };
		while (rte_ring_mp_enqueue(engines[k].ctl, &c[k]) != 0)
			sched_yield();
		engine_wake(&engines[k]);
		n++;
	}
	while (__atomic_load_n(&w.arrived, __ATOMIC_ACQUIRE) != n)
		sched_yield();
	fn(arg);
	__atomic_store_n(&w.release, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&w.left, __ATOMIC_ACQUIRE) != n)
		rte_pause();
	for (k = 0; k < eng.n; k++) {
		if (held[k]) {
			count_direct(&engines[k]);
			engine_release(&engines[k]);
		} else if (engines[k].looping) {
			while (!__atomic_load_n(&c[k].done, __ATOMIC_ACQUIRE))
				rte_pause();
		}
	}
	pthread_mutex_unlock(&eng.world);
}

/*
 * dpib_engine_lend: @fn on the lcore of the engine of the device's first
 * shard, from its control ring (between two passes), for as long as it
 * takes (engine_call's warning after 10 s is for control calls). The
 * caller sleeps on a semaphore meanwhile: a thread yielding in a loop
 * took CPU from what the lender measures on the other CPUs.
 */
struct lend {
	void (*fn)(void *);
	void *arg;
	sem_t done;
};

static void
lend_run(void *arg)
{
	struct lend *l = arg;

	l->fn(l->arg);
	sem_post(&l->done);
}

int
hca_engine_lend(struct ib_dev *dev, void (*fn)(void *), void *arg)
{
	struct ib_engine *e = dev->sh[0].eng;
	struct lend l = { .fn = fn, .arg = arg };
	struct ib_ctl c = { .fn = lend_run, .arg = &l };

	if (dev->conf.engine_mode == IB_ENGINE_INLINE || ib_engine_inline)
		return ENOTSUP;
	if (e == NULL || !e->looping)
		return EAGAIN;
	if (rte_lcore_id() == e->lcore)
		return EDEADLK;
	if (sem_init(&l.done, 0, 0) != 0)
		return errno;
	while (rte_ring_mp_enqueue(e->ctl, &c) != 0)
		sched_yield();
	engine_wake(e);
	while (sem_wait(&l.done) != 0)
		;	/* EINTR */
	/* run_ctl still marks c, on this stack, done. */
	while (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE))
		rte_pause();
	sem_destroy(&l.done);
	return 0;
}

/*
 * Run @fn while no engine runs a pass, and wait for it: on the engine
 * itself with one engine (between two passes), with every engine parked
 * with several; in inline mode under the pass locks. What the change set
 * in motion (a drain, a flush) then happens at once in inline mode, as it
 * would on an engine lcore.
 */
/* @fn with every engine standing still: on the one engine, or all parked. */
static void
engines_still(void (*fn)(void *), void *arg)
{
	if (eng.n == 1)
		engine_call(&engines[0], fn, arg);
	else
		world_stopped(fn, arg);
}

int
ib_engine_exec(struct ib_dev *dev, void (*fn)(void *), void *arg)
{
	int i;

	(void)dev;
	if (!eng.launched) {
		fn(arg);
		return 0;
	}
	engines_still(fn, arg);
	if (ib_engine_inline)
		for (i = 0; i < IB_INLINE_PASSES && ib_engine_progress(); i++)
			;
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

/*
 * A munmap on EAL's interrupt thread while the engines run: what goes may
 * be a port's shared memory. DPDK 22.11's memif tears a connection down
 * there when its peer leaves (memif_disconnect): it marks the port
 * disconnected, then unmaps the regions that hold the rings and buffers,
 * while a burst an engine began before the mark may still be copying
 * into them (a server whose perftest client exited died with SIGSEGV in
 * eth_memif_tx; a burst preempted on a busy CPU stays inside for
 * milliseconds). Every engine passes a quiescent point first, so the
 * bursts still under way end before the pages go; one begun after the
 * mark returns at once. Other munmap calls of that thread are rare
 * (an alarm's free of a large block) and pay a pass.
 */
static void
unmap_fenced(void *arg)
{
	uint32_t k, i;

	RTE_SET_USED(arg);
	/* Each engine's own shards, counted where it stands still (on the
	 * engine, or with every engine parked): counter engine_unmap_fences.
	 */
	for (k = 0; k < eng.n; k++)
		for (i = 0; i < engines[k].nsh; i++)
			engines[k].sh[i]->cnt[IB_CNT_UNMAP_FENCE]++;
}

void
ib_engine_unmap_fence(void)
{
	/* Not ib_engine_exec: its inline passes afterwards would run on
	 * the interrupt thread.
	 */
	if (eng.launched && rte_thread_is_intr())
		engines_still(unmap_fenced, NULL);
}

static void
remove_shard(void *arg)
{
	struct ib_shard *sh = arg;
	struct ib_engine *e = sh->eng;
	uint32_t i;

	for (i = 0; i < e->nsh; i++)
		if (e->sh[i] == sh) {
			ib_wake_unregister(sh, e->epfd);
			e->sh[i] = e->sh[--e->nsh];
			break;
		}
}

void
ib_engine_detach(struct ib_dev *dev)
{
	uint32_t k;

	if (!dev->attached)
		return;
	for (k = 0; k < dev->nsh; k++) {
		engine_call(dev->sh[k].eng, remove_shard, &dev->sh[k]);
		dev->sh[k].eng = NULL;
	}
	dev->attached = 0;
}

/*
 * dpib_inject(): a frame handed to the receive path as if the port had
 * delivered it (tests, fuzzing), on engine 0. Without a running engine it
 * is processed here, on the caller's thread.
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
	if (!dev->attached || !engines[0].looping || ib_engine_inline) {
		uint32_t self = ib_self;

		rte_spinlock_lock(&engines[0].run);
		ib_self = 0;
		ib_rx(dev, m);
		ib_resp_flush_acks(dev);
		ib_tx_flush(dev);
		ib_self = self;
		rte_spinlock_unlock(&engines[0].run);
		return 0;
	}
	while (rte_ring_mp_enqueue(dev->inject, m) != 0)
		sched_yield();
	engine_wake(&engines[0]);
	return 0;
}

/*
 * Inline mode, a post: a pass that only transmits - the doorbells, the
 * posted QP's requester, then the flush (held ACKs behind its frames).
 * Receiving, timers and the other QPs are the next full pass's: a poll's,
 * the loop's, or every ENG_POST_FULL-th post's. A one-WR post then costs
 * its packet, not a pass over the port (perftest's ib_write_bw posts one
 * WR per call).
 *
 * UC and UD complete on send, so nothing of theirs stays on the wire:
 * their stream is the posts since the last full pass, ENG_POST_DEEP or
 * more without a poll. (Flushed at every post, each one's frame reached
 * the memif ring alone, and the next post's locked SQ lock waited for
 * those stores to the shared ring: ib_write_bw -s 64 -c UC over memif
 * 2.1 M msg/s against 5.5 with RC.)
 *
 * A post on a QP that already has ENG_POST_DEEP WRs or more on the wire (a
 * stream: its completion comes after theirs anyway) leaves its frames for
 * the next flush: the next post's that does not, the next full pass's
 * (every ENG_POST_FULL-th post, a poll, arming a CQ, an event wait, the
 * loop), or the post that finds ENG_POST_FLUSH frames queued. The port
 * then takes a stream in bursts of about ENG_POST_FLUSH frames, and the
 * peer's responder, seeing bursts, sends one ACK per burst (ib_resp.c):
 * memif, perftest ib_write_bw -s 64 -q 1, 2.0 to 5.0 M msg/s and 0.61 to
 * 0.07 ACKs per message. Full passes every 64 posts rather than 16 (a
 * program that polls has its ACKs taken in by its polls anyway): -q 64
 * 4.6 -> 5.35, -q 1 5.3 -> 5.6 M msg/s (interleaved runs); flushing at 32
 * frames instead of 16 lost -q 1 a third of its rate. Small frames
 * (the last one queued at most ENG_POST_SMALL bytes) go in bursts of
 * ENG_POST_FLUSH_SMALL: memif, -s 64 -q 64 6.01 -> 6.27, -q 1 6.48 -> 6.59
 * M msg/s (medians of 4 interleaved runs), -c UC 6.55 -> 6.87; 24 of
 * every size cost -s 65536 6 %, 32 small ones cost -q 1 6 %. A program
 * that posts such a stream and then waits outside verbs without arming a
 * CQ has its last frames sent when the loop takes over: while posts
 * defer, the loop's naps last at most ENG_DEFER_STREAM_US (engine_main),
 * not the ENG_DEFER_MAX_US it may reach while calls keep driving. (Naps of
 * about takeover_us instead cost the memif stream half its rate: the loop
 * then wakes on a CPU the two programs need.)
 */
static unsigned int
post_pass(struct ib_shard *sh, struct ib_qp *qp)
{
	uint64_t queued = sh->tx_queued;
	uint64_t t0 = pass_sampled(sh) ? rte_rdtsc() : 0;
	unsigned int n;

	/* No clock for the pass: what needs one (an RTT sample, the timer
	 * of a first packet) reads the TSC (ib_qp_now), rarely in a stream.
	 */
	sh->now = 0;
	n = take_doorbells(sh);
	if (qp->active == IB_QP_ACTIVE)
		ib_req_run(qp);
	if ((qp->req.wqe_idx - qp->comp.wqe_idx < ENG_POST_DEEP &&
	     (qp->ibv.qp_type == IBV_QPT_RC ||
	      ++sh->post_streak < ENG_POST_DEEP)) ||
	    sh->tx_n >= ENG_POST_FLUSH_SMALL ||
	    (sh->tx_n >= ENG_POST_FLUSH &&
	     sh->tx_pending[sh->tx_n - 1]->pkt_len > ENG_POST_SMALL))
		tx_settle(sh, 0, 0);	/* a post holds nothing: no clock */
	else if (!__atomic_load_n(&sh->eng->deferred, __ATOMIC_RELAXED))
		__atomic_store_n(&sh->eng->deferred, 1, __ATOMIC_RELAXED);
	if (t0 != 0 && sh->tx_queued != queued)
		sh->cnt[IB_CNT_CYCLES_SEND] += (rte_rdtsc() - t0) *
					       ENG_TIME_EVERY;
	return n + (unsigned int)(sh->tx_queued - queued);
}

/*
 * Inline mode: one pass of engine @e, from an application call: a full
 * one, or with @post the pass of a post on that QP of a one-shard engine
 * (the transmit-only post_pass, every ENG_POST_FULL-th time a full one).
 * A thread finding another one inside the pass does not wait.
 *
 * @ring: the post published WRs and its doorbell is rung here. A poster
 * that gets the pass lock is the engine: it puts the QP on the active list
 * itself, with no fence and no ring (the lock's locked instruction already
 * ordered the post's WQEs before what it reads here, as the doorbell's
 * fence would, and nothing can be parking the QP meanwhile), and wakes a
 * sleeping loop as the doorbell does. One that finds the lock taken rings
 * the doorbell. A post then costs two locked instructions (the SQ lock,
 * the pass lock) where it cost five, each waiting for the stores before it
 * to drain.
 */
static __thread uint64_t post_tsc __attribute__((tls_model("initial-exec")));
static __thread uint32_t post_clock __attribute__((tls_model("initial-exec")));

static int
drive(struct ib_engine *e, struct ib_qp *post, int ring)
{
	uint64_t now;
	uint32_t self;
	int work, unread;

	/*
	 * The time of the call, for the loop (app_tsc): a post reads the
	 * TSC one time in ENG_POST_CLOCK and otherwise reuses this thread's
	 * last reading (the TSC cost a stream 5 % of the client's CPU:
	 * ib_write_bw -s 64 over memif, medians of 4 interleaved runs, 5.65
	 * -> 6.07 M msg/s). The loop then
	 * sees a stream's posts at most ENG_POST_CLOCK - 1 posts late, and
	 * a program that posts now and then (when the loop is needed) may
	 * look idler than it is to it; every other call reads the TSC.
	 */
	if (post == NULL || (++post_clock & (ENG_POST_CLOCK - 1)) == 0 ||
	    unlikely(post_tsc == 0))
		post_tsc = rte_rdtsc();
	now = post_tsc;
	/* Before the lock: a call that finds the loop inside a pass still
	 * tells it that calls drive, so that it backs off.
	 */
	__atomic_store_n(&e->app_tsc, now, __ATOMIC_RELAXED);
	if (!rte_spinlock_trylock(&e->run)) {
		if (ring)
			ib_engine_doorbell(post);
		return 0;
	}
	if (ring) {
		engine_wake_fenced(e);	/* the trylock was the fence */
		if (!__atomic_load_n(&post->db_armed, __ATOMIC_RELAXED)) {
			__atomic_store_n(&post->db_armed, 1, __ATOMIC_RELAXED);
			ib_engine_activate(post);
		}
	}
	/* The program drives again while the loop sleeps with a memif ring
	 * unmasked: the peer would write the ring's eventfd after every
	 * burst and this side's receive read it, two system calls a frame,
	 * until the loop wakes (its timer: up to 100 ms; ib_send_lat -s 8
	 * over memif, whose server's loop slept so while it waited for its
	 * client, 0.98 -> 1.2 us typical). The call masks it here, under
	 * the pass lock; the loop, left asleep, tidies up when it wakes.
	 */
	if (unlikely(__atomic_load_n(&e->memif_armed, __ATOMIC_RELAXED))) {
		uint32_t k;

		__atomic_store_n(&e->memif_armed, 0, __ATOMIC_RELAXED);
		for (k = 0; k < e->nsh; k++)
			ib_wake_mask(e->sh[k]);
	}
	self = ib_self;
	ib_self = e->id;
	if (post != NULL &&
	    (++post->sh->posts & (ENG_POST_FULL - 1)) != 0)
		work = (int)post_pass(post->sh, post);
	else
		work = (int)passes(e, post != NULL ? rte_rdtsc() : now);
	ib_self = self;
	/* What this pass sent the engine itself wakes no sleeping loop (on
	 * a loopback port it waits for doorbells only); the program may wait
	 * on another engine's CQ meanwhile. Read under the lock,
	 * no fence: a loop that stored `sleeping` before its last look took
	 * the lock before this pass did.
	 */
	unread = loop_unread(e) &&
		 __atomic_load_n(&e->sleeping, __ATOMIC_RELAXED);
	run_unlock(e);
	if (unlikely(unread))
		ring_efd(e);
	return work;
}

/* One pass of every engine. */
int
ib_engine_progress(void)
{
	uint32_t k;
	int work = 0;

	for (k = 0; k < eng.n; k++)
		work += drive(&engines[k], NULL, 0);
	return work;
}

/* ... of the engine that owns @qp (a post's full pass). */
int
ib_engine_progress_qp(struct ib_qp *qp)
{
	return qp->sh != NULL && qp->sh->eng != NULL ?
	       drive(qp->sh->eng, NULL, 0) : ib_engine_progress();
}

/* ... of the engine that owns @qp, for a post on it (@ring: drive). */
int
ib_engine_post_qp(struct ib_qp *qp, int ring)
{
	struct ib_shard *sh = qp->sh;
	struct ib_engine *e = sh != NULL ? sh->eng : NULL;

	if (e == NULL || e->nsh != 1) {
		if (ring)
			ib_engine_doorbell(qp);
		return ib_engine_progress_qp(qp);
	}
	return drive(e, qp, ring);
}

/* ... of the engines whose QPs complete on @cq (a poll). */
int
ib_engine_progress_cq(struct ib_cq *cq)
{
	uint32_t feeds = cq->feeds, k;
	int work = 0;

	poll_cq = cq;
	if (feeds == 0 || eng.n == 1) {
		work = ib_engine_progress();
	} else {
		while (feeds != 0) {
			k = (uint32_t)__builtin_ctz(feeds);
			feeds &= feeds - 1;
			if (k < eng.n)
				work += drive(&engines[k], NULL, 0);
		}
	}
	poll_cq = NULL;
	return work;
}

/*
 * At exit, keep the engines going a moment for devices on real links: the
 * last ACKs of a finished exchange are then delivered before the port
 * closes (a memif peer loses what it has not read yet when the link goes).
 */
static void
linger(void)
{
	uint64_t hz = rte_get_tsc_hz(), end = rte_rdtsc() + hz / 1000 * 100;
	uint64_t idle = rte_rdtsc();
	uint32_t i, k;
	int remote = 0;

	for (k = 0; k < eng.n; k++)
		for (i = 0; i < engines[k].nsh; i++)
			remote |= !engines[k].sh[i]->dev->conf.loopback;
	if (!remote)
		return;
	while (rte_rdtsc() < end && rte_rdtsc() - idle < hz / 1000 * 20) {
		if (!ib_engine_inline)
			rte_delay_us_sleep(1000);
		else if (ib_engine_progress())
			idle = rte_rdtsc();
	}
}

#define LINGER_WAIT_MS	1000	/* for the interrupt thread to run it */

struct intr_call {
	void (*fn)(void *);
	void *arg;
	int done;
};

static void
intr_call_run(void *p)
{
	struct intr_call *c = p;

	c->fn(c->arg);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

/* rte_eal_alarm_cancel waits for a call under way: after it, @fn ran on
 * the interrupt thread or will not run there at all.
 */
void
hca_run_on_intr_thread(void (*fn)(void *), void *arg, unsigned int wait_ms)
{
	struct intr_call c = { .fn = fn, .arg = arg, .done = 0 };
	unsigned int ms;

	if (rte_eal_alarm_set(1, intr_call_run, &c) == 0)
		for (ms = 0; ms < wait_ms &&
		     !__atomic_load_n(&c.done, __ATOMIC_ACQUIRE); ms++)
			rte_delay_us_sleep(1000);
	rte_eal_alarm_cancel(intr_call_run, &c);
	if (!__atomic_load_n(&c.done, __ATOMIC_ACQUIRE))
		fn(arg);
}

static void
linger_call(void *arg)
{
	RTE_SET_USED(arg);
	linger();
}

/*
 * Inline mode: the loops stop first, and the last passes run on EAL's
 * interrupt thread (an alarm), the thread that handles a memif peer's
 * disconnect. DPDK 22.11's memif unmaps the shared regions there while a
 * receive burst on another thread may still read them: a peer that left
 * while this process lingered crashed it in memif's receive (seen under
 * CPU contention, ibv_rc_pingpong's server: dpib_exit, linger, passes,
 * memif rx). On one thread the two take turns; a port whose peer left
 * then receives nothing. Should the alarm not run in time, the passes
 * run here (hca_run_on_intr_thread).
 */
void
ib_engine_shutdown(void)
{
	if (!eng.launched)
		return;
	if (!ib_engine_inline)
		linger();
	eng.launched = 0;
	engines_stop(eng.n);
	if (ib_engine_inline)
		hca_run_on_intr_thread(linger_call, NULL, LINGER_WAIT_MS);
}
