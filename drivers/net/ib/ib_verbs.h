/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_VERBS_H
#define IB_VERBS_H

/*
 * The HCA's objects as the driver lays them out: each embeds its verbs
 * object first (as rdma-core providers do), recovered with to_*(); the
 * rings, the QP's transport state, the device. Helpers that only read
 * them follow.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>
#include <infiniband/verbs.h>
#include <rte_common.h>
#include <rte_epoll.h>
#include <rte_ether.h>
#include <rte_prefetch.h>
#include <rte_spinlock.h>

#include "ib_param.h"
#include "ib_queue.h"
#include "ib_wire.h"
#include "ib_counters.h"
#include "ib_conf.h"
#include "ib_dcqcn.h"

struct ib_dev;
struct ib_fault;
struct ib_engine;
struct ib_neigh;

/* What wakes a sleeping engine when a frame arrives (ib_wake.c). */
enum ib_wake_kind {
	IB_WAKE_NONE,		/* none: the engine naps in bounded steps */
	IB_WAKE_RX_INTR,	/* the port's receive interrupt */
	IB_WAKE_PMD_SOCK,	/* net_af_packet's own socket for the queue */
	IB_WAKE_TAP,		/* a packet socket on the af_packet interface */
	IB_WAKE_MEMIF,		/* net_memif's ring interrupt, found when armed */
};

struct ib_wake {
	int kind;		/* enum ib_wake_kind */
	int fd;
	int epfd;		/* IB_WAKE_PMD_SOCK, _MEMIF: the set it joins armed */
	struct rte_epoll_event ev;	/* IB_WAKE_TAP, _PMD_SOCK, _MEMIF: in it */
	volatile uint16_t *memif_flags;	/* IB_WAKE_MEMIF, armed: the ring's */
};

/* Engine -> application events (ib_event.c). */
struct ib_evq {
	struct ib_queue q;
	uint32_t rec_size;
	int efd;		/* eventfd, semaphore mode: one count a record */
	rte_spinlock_t lock;	/* application side only */
	rte_spinlock_t push_lock;	/* producers: engines, the port watch */
	uint64_t dropped;
};

/* A completion-channel record. */
struct ib_cq_event {
	struct ib_cq *cq;
};

enum ib_cq_arm {
	IB_CQ_DISARMED,
	IB_CQ_ARM_NEXT,
	IB_CQ_ARM_SOLICITED,
};

struct ib_pd {
	struct ibv_pd ibv;
	uint32_t refcnt;	/* MRs and QPs in it */
};

/* What a slot of the key table holds. */
enum ib_key_kind {
	IB_KEY_MR,
	IB_KEY_MW,
	IB_KEY_REGION,	/* never in the table: ib_dma.c's, watched */
};

/*
 * A key-table entry: a memory region, or (kind IB_KEY_MW, inside struct
 * ib_mw) a memory window, whose iova/length/access then describe the
 * window as remote peers address it.
 */
struct ib_mr {
	struct ibv_mr ibv;
	uint64_t iova;		/* start of the region as keys address it */
	uint8_t *addr;
	uint64_t length;
	uint32_t access;
	uint32_t key;		/* index << 8 | generation (MW: bind tag) */
	uint8_t kind;		/* enum ib_key_kind */
	uint8_t dead;		/* MR: its memory was unmapped (ib_memhook.c) */
	uint32_t nbound;	/* MR: windows bound to it (engine only) */
	uint32_t deaths;	/* MR: times ib_memhook.c found it changed */
	uintptr_t hook_lo, hook_hi;	/* MR: the range ib_memhook.c watches */
	struct ib_dev *dev;
	/* MR: known to DPDK for the port's DMA (ib_dma.c); the pages it
	 * holds regions of, 0 when none (DPDK's own memory, or no DMA).
	 */
	uint8_t dma;
	uint32_t zc;		/* MR: READ responses the port holds (atomic) */
	uint32_t dma_pgsz;	/* page size of its registration */
	struct rte_memseg_list *dma_msl; /* the one holding it, or NULL */
	uintptr_t dma_lo, dma_hi;
};

/*
 * A memory window (IBA 10.6.7). Bound, it lets remote peers reach
 * [k.iova, k.iova + k.length) with k.access; those bytes are the MR's from
 * its address @base on. Its state changes only in the engine (binds and
 * invalidations are executed there, in SQ order).
 */
struct ib_mw {
	struct ib_mr k;		/* key-table entry; k.ibv.pd is the MW's PD */
	struct ibv_mw ibv;
	struct ib_mr *mr;	/* bound to, or NULL */
	uint64_t base;		/* start of the window in the MR's addresses */
	uint32_t qpn;		/* type 2: the QP it is bound to */
	uint8_t valid;		/* bound and not invalidated */
	struct ib_qp *qp;	/* type 2 and valid: that QP (its mw_bound) */
};

struct ib_cq {
	union {
		struct ibv_cq ibv;
		struct ibv_cq_ex ibv_ex;	/* ibv_create_cq_ex */
	};
	/* Read by the engine at every completion, written rarely. */
	struct ib_dev *dev;
	uint32_t armed;			/* enum ib_cq_arm, one shot */
	struct ib_evq *channel;		/* completion channel, or NULL */
	struct ib_evq *async;		/* the context's async events */
	/*
	 * Completion timestamps (TSC), a ring parallel to q with its index
	 * mask; NULL unless the CQ was created asking for them, so that
	 * other CQs pay one predictable branch per completion.
	 */
	uint64_t *ts;
	uint64_t last_ts;		/* engine: keeps ts monotonic */
	/* Inline mode, ib_cq_linger: the producer index just past the last
	 * UC send completion; UC requests the QPs completing here took in,
	 * and the TSC of the last one.
	 */
	uint32_t uc_sent;
	uint32_t uc_rx;
	uint64_t uc_rx_tsc;
	/* QPs of more than one engine complete here: producers take
	 * prod_lock (set by the control path before such a QP can run).
	 */
	uint8_t shared;
	uint8_t home;			/* shard + 1 of its first QP, or 0 */
	uint16_t feeds;			/* shards with a QP completing here */
	rte_spinlock_t prod_lock;
	struct ib_queue q;	/* of struct ibv_wc; engine produces */
	/* Application threads only: kept off the engine's lines. */
	rte_spinlock_t poll_lock __rte_cache_aligned;
	uint32_t refcnt;		/* QPs using it */
	uint32_t comp_events_reported;	/* handed out by ibv_get_cq_event */
	uint32_t async_events_reported;
	/* ib_cq_linger, under poll_lock: how long a UC QP's peer took to
	 * answer (TSC; 0: not known), and where the last wait began.
	 */
	uint64_t linger_gap, linger_sent;
	uint32_t linger_mark;
	uint32_t linger_missed;		/* waits in a row with no answer */
	/* Extended polling (lib/verbs/cq_ex.c), under poll_lock. */
	uint32_t ex_pos;		/* current entry, consumed at end_poll */
	const struct ibv_wc *ex_cur;
	/* TSC and CLOCK_REALTIME read together when ts was allocated:
	 * the origin of the wall-clock conversion.
	 */
	uint64_t ref_tsc;
	uint64_t ref_ns;
};

/*
 * Send WQE as the application writes it into the SQ: what every WR has,
 * then what its opcode needs (the union), then its SGEs or inline bytes.
 * A UD WQE also has a copy of the AH's address vector at av_off in the
 * slot (sq_wqe_av).
 */
struct ib_send_wqe {
	uint64_t wr_id;
	uint32_t length;	/* total bytes of the message */
	union {
		rte_be32_t imm;	/* SEND/RDMA WRITE with immediate */
		uint32_t bind_access;	/* BIND_MW: the window's rights */
	};
	uint32_t rkey;		/* RDMA, atomics: the remote key; LOCAL_INV,
				 * SEND_WITH_INV: the one to invalidate;
				 * BIND_MW: the window's new rkey */
	uint8_t flags;		/* IBV_SEND_*, SIGNALED resolved with sq_sig_all */
	uint8_t opcode;		/* enum ibv_wr_opcode */
	uint8_t num_sge;	/* 0 with IBV_SEND_INLINE */
	uint8_t resv;
	union {			/* what the opcode needs, by opcode */
		struct {	/* RDMA WRITE/READ, ATOMIC WRITE, the atomics */
			uint64_t va;
			uint64_t compare_add;	/* CMP_AND_SWP, FETCH_ADD */
			uint64_t swap;		/* CMP_AND_SWP */
		} rdma;
		struct {	/* UD SEND; the address vector at av_off */
			uint32_t qpn;
			uint32_t qkey;	/* high bit: the QP's Q_Key */
		} ud;
		struct {	/* BIND_MW (type 2 through the SQ, type 1 too) */
			uint64_t addr, length;
			uint32_t mw_index;	/* its slot in the key table */
			uint32_t lkey;		/* the MR, 0: unbind */
		} bind;
	};
	union {
		struct ibv_sge sge[0];
		uint8_t inline_data[0];
	};
};

/*
 * 48 bytes: one SGE (a message rate test's, perftest's) fills one cache
 * line with it, and so does a SEND with 16 inline bytes. The engine
 * reads each WQE the application wrote on another CPU: at 56 bytes the
 * SGE straddled two lines, each a transfer between the CPUs (dpib-perf
 * 64 B WRITE, engine lcore: a sixth of the requester's samples on the
 * second line's first load).
 */
_Static_assert(sizeof(struct ib_send_wqe) == 48, "send WQE header size");
_Static_assert(IBV_SEND_IP_CSUM <= UINT8_MAX, "send flags in a byte");
_Static_assert(IB_MAX_SGE <= UINT8_MAX, "num_sge in a byte");

struct ib_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;
	struct ibv_sge sge[0];
};

/* A receive WQE the responder took out of its RQ or SRQ. */
struct ib_rwqe_copy {
	struct ib_recv_wqe w;
	struct ibv_sge sge[IB_MAX_SGE];
};

struct ib_srq {
	struct ibv_srq ibv;
	struct ib_dev *dev;
	struct ib_queue q;		/* of struct ib_recv_wqe */
	rte_spinlock_t post_lock;	/* application threads only */
	uint32_t max_sge;
	uint32_t max_wr;
	uint32_t limit;			/* armed when non-zero (engine) */
	uint32_t refcnt;		/* QPs attached */
	struct ib_evq *async;
	uint32_t events_reported;
	/* QPs of more than one engine take from it: under take_lock. */
	uint8_t shared;
	uint16_t feeds;			/* shards with a QP attached */
	rte_spinlock_t take_lock;
};

/*
 * The encapsulation of one destination: Eth [+ 802.1Q] + IPv4 or IPv6 +
 * UDP, copied in front of every BTH. The IP length fields (and the IPv4
 * checksum) are filled per packet; the BTH starts at b + len.
 */
struct ib_encap {
	uint8_t b[IB_HDR_MAX];
	uint8_t len;			/* template bytes */
	uint8_t ip_off;			/* 14, or 18 with a VLAN tag */
	uint8_t ip6;			/* IPv6 rather than IPv4 */
	uint8_t resolved;		/* engine: b holds the destination MAC */
	uint8_t neigh;			/* engine: ... learned by ARP/ND, */
	uint32_t neigh_gen;		/* ... as of this table generation */
	union {
		uint32_t dip;		/* IPv4, network order */
		uint8_t dip6[16];
	};
};

/* An address handle: the resolved header template of a UD destination. */
struct ib_ah {
	struct ibv_ah ibv;
	struct ibv_ah_attr attr;
	struct ib_encap hdr;
};

/* Engine-private bookkeeping of each SQ slot. */
struct ib_swqe_state {
	uint32_t first_psn;
	uint32_t last_psn;	/* last PSN of the request (READ: of its responses) */
	uint32_t npkts;
	uint32_t status;	/* enum ibv_wc_status the WQE completes with */
	uint32_t zc;		/* its zero-copy frames not yet freed by the
				 * port (ib_tx.c's callbacks) */
};

/* A gather/scatter position inside a WQE's SGE list. */
struct ib_sge_cursor {
	uint32_t idx;
	uint32_t off;
};

/* Where the QP sends to: set at RTR (IBA 10.2.4 primary path). */
struct ib_path {
	struct ib_encap hdr;
	uint32_t mtu;			/* path MTU in bytes */
	uint32_t dest_qpn;
};

struct ib_req {
	uint32_t wqe_idx;	/* next SQ slot to transmit */
	uint32_t hw_idx;	/* past the last slot ever transmitted whole */
	uint32_t offset;	/* bytes of that WQE already sent */
	uint32_t psn;		/* next PSN to send */
	uint32_t max_psn;	/* one past the highest PSN ever sent */
	struct ib_sge_cursor cur;
	uint32_t rd_atomic;	/* READ/atomic requests in flight */
	uint64_t wait_until;	/* RNR back-off: no sending before (TSC) */
};

/*
 * Congestion window of an RC requester (ib_cc.c). cwnd and armed are read
 * for every packet sent, the rest once a round trip or on a loss.
 */
struct ib_cc {
	uint32_t cwnd;		/* PSNs in flight allowed */
	uint8_t armed;		/* RTT sample and early timer need nothing */
	uint8_t lossy;		/* the path lost a packet once: resend early */
	uint32_t ssthresh;
	uint32_t cwnd_acc;	/* PSNs acknowledged toward cwnd + 1 */
	uint32_t probe_psn;	/* RTT sample: this PSN, sent at probe_tsc */
	uint32_t backoff;	/* early resends since the last progress */
	uint64_t probe_tsc;	/* 0: no sample under way */
	uint64_t srtt, rttvar;	/* smoothed RTT and its deviation (TSC) */
	uint64_t early;		/* early resend due (TSC), 0: none */
	uint64_t rto_min;	/* IB_RTO_MIN_US in TSC */
	uint32_t recover;	/* no second cut before this PSN is acked */
	uint8_t recover_set;
};

struct ib_comp {
	uint32_t wqe_idx;	/* oldest SQ slot not yet completed */
	uint32_t read_off;	/* READ response bytes placed for that WQE */
	struct ib_sge_cursor cur;
	uint32_t acked_psn;	/* last PSN the responder acknowledged */
	uint32_t read_gap;	/* 1 + PSN of a lost response asked for again */
	uint64_t deadline;	/* retransmit timer (TSC), 0 when idle */
	uint32_t retry_left;
	uint32_t rnr_left;
	uint8_t zc_wait;	/* the head WQE waits for its frames' release */
};

/*
 * A READ or atomic the responder still has to answer. Responses leave in
 * PSN order (IBA 9.7.5.1), so atomic ACKs queue behind READ data.
 */
enum ib_job_kind {
	IB_JOB_READ,		/* READ response data */
	IB_JOB_ATOMIC_ACK,	/* an ATOMIC ACKNOWLEDGE carrying orig */
	IB_JOB_ACK,		/* the ACK of an ATOMIC WRITE */
};

struct ib_read_job {
	uint64_t va;
	uint32_t rkey;
	uint32_t length;
	uint32_t offset;	/* bytes already sent */
	uint32_t psn;		/* of the next response packet */
	uint8_t kind;		/* enum ib_job_kind */
	uint8_t again;		/* answers a duplicate: may be dropped */
	uint32_t msn;		/* of the AETH: as when the request ran */
	uint64_t orig;
};

/* Atomic results kept for duplicates (C9-124: never executed twice). */
struct ib_atomic_replay {
	uint32_t psn;
	uint8_t valid;
	uint64_t orig;
};

#define IB_MAX_READ_JOBS	IB_MAX_RD_ATOMIC

struct ib_resp {
	uint32_t epsn;		/* expected PSN */
	uint32_t msn;
	uint32_t last_op_mask;	/* inside a multi-packet SEND or WRITE */
	uint8_t nak_seq_sent;
	uint8_t nak_queued;	/* a fatal NAK waits behind the responses */
	uint8_t nak_syndrome;	/* ... its AETH syndrome */
	uint8_t ack_pending;	/* an ACK of ack_psn waits for the burst end */
	uint8_t ack_owed;	/* ... or for the peer's MAC (owed_*) */
	uint8_t owed_syndrome;
	uint8_t ack_stream;	/* AckReq packets came in consecutive passes */
	uint8_t ack_held;	/* AckReq packets the pending ACK covers */
	uint8_t ack_end;	/* ... one of them a message's last */
	uint32_t ack_pass;	/* the shard's pass of the last of them */
	uint32_t ack_psn;
	uint32_t owed_psn;
	uint32_t nak_psn;	/* the queued NAK's */
	/* Current SEND: the receive WQE being filled. */
	int have_rwqe;
	uint32_t recv_off;
	uint8_t drop_msg;	/* UC: rest of a message with a lost packet */
	uint8_t comm_est;	/* IBV_EVENT_COMM_EST raised */
	struct ib_sge_cursor cur;
	/* Current WRITE. */
	uint32_t wkey;
	uint64_t wva;
	uint32_t wremain;
	uint32_t wlen;
	/* The RETH of the READ being executed. */
	uint64_t rd_va;
	uint32_t rd_rkey;
	uint32_t rd_len;
	/* READ responses to send, a ring of IB_MAX_READ_JOBS (rd). */
	uint32_t rd_head, rd_tail;
	/* The last atomics' results, newest at replay_next - 1: at least as
	 * many as a requester may have outstanding (max_dest_rd_atomic).
	 */
	uint32_t replay_next;
	/* The arrays after every scalar: a pass reads the indices above. */
	struct ib_read_job rd[IB_MAX_READ_JOBS];
	struct ib_atomic_replay replay[IB_MAX_READ_JOBS];
	/* Cold and large: the receive WQE the current SEND fills, last so
	 * that the fields above share cache lines.
	 */
	struct ib_rwqe_copy rwqe;
};

/*
 * Bound on a QP's max_inline: ib_qp_create sizes the SQ stride for
 * max(SGE list, inline bytes) and rounds it up to 64 bytes.
 */
#define IB_WR_INLINE_MAX \
	((IB_MAX_SGE * sizeof(struct ibv_sge) > IB_MAX_INLINE ? \
	  IB_MAX_SGE * sizeof(struct ibv_sge) : IB_MAX_INLINE) + 64)

/*
 * The ibv_wr_* batch between wr_start and wr_complete (lib/verbs/qp_ex.c):
 * WRs are written into the SQ slots past the producer index under sq_lock,
 * then published together or dropped.
 */
struct ib_wr_batch {
	struct ibv_send_wr wr;	/* the WR being built, not yet in the SQ */
	union {			/* its data, copied when the setter ran */
		struct ibv_sge sge[IB_MAX_SGE];
		uint8_t inline_data[IB_WR_INLINE_MAX];
	};
	struct ibv_sge inline_sge;	/* wr's view of inline_data */
	uint32_t n;		/* WRs written past the producer index */
	int open;		/* wr is being built */
	int err;		/* first error: wr_complete drops the batch */
	int biased;		/* entered by the SQ lock's bias */
};

struct ib_qp {
	union {
		struct ibv_qp ibv;
		struct ibv_qp_ex ibv_ex;	/* ibv_create_qp_ex */
	};
	struct ib_dev *dev;
	struct ib_shard *sh;	/* the engine that owns it, on dev */
	struct ib_cq *scq, *rcq;

	/* Post path (application threads). */
	struct ib_queue sq;
	struct ib_queue rq;
	/* Written at every post: a line of their own, away from the state
	 * the engine reads at every WQE.
	 */
	rte_spinlock_t sq_lock __rte_cache_aligned;
	rte_spinlock_t rq_lock;
	uint32_t sq_bias;	/* the thread that posts without sq_lock
				 * (ib_sq_enter), 0: none yet, IB_BIAS_OFF */
	uint32_t sq_busy;	/* ... inside a post */
	uint8_t post_line_end[0] __rte_cache_aligned;
	uint32_t max_send_sge, max_recv_sge, max_inline;
	uint32_t av_off;	/* UD: address vector's offset in a send slot */
	int sq_sig_all;
	uint32_t db_armed;	/* queued or active on the engine */
	uint32_t db_hot;	/* the engine visits it until a heavy fence:
				 * a post needs no fence (ib_engine_doorbell) */

	/* Attributes as set by ibv_modify_qp, for ibv_query_qp. */
	struct ibv_qp_attr attr;
	struct ibv_qp_cap cap;
	struct ib_srq *srq;
	struct ib_evq *async;		/* the context's async events */
	uint32_t events_reported;
	uint8_t sq_drained;		/* IBV_EVENT_SQ_DRAINED raised in SQD */
	uint32_t mw_bound;		/* type 2 windows bound to it */

	/* Engine side. What a pass and a packet read comes first, in
	 * consecutive lines: the run lists, the timers, the requester, the
	 * completer, the window, the header template, the responder's
	 * scalars; the responder's arrays and the cold rest after. With
	 * thousands of QPs each costs the engine these lines, not scattered
	 * fields of a 10 KiB object.
	 */
	TAILQ_ENTRY(ib_qp) next __rte_cache_aligned;
	int active;		/* enum ib_qp_sched: which engine list */
	uint32_t idle_passes;	/* engine passes with nothing to do */
	uint32_t hot_prod;	/* sq.prod at its last visit (hot_consider) */
	uint32_t hot_streak;	/* visits that found new WRs since it parked */
	uint64_t hot_work;	/* hot: TSC of the last pass it had work */
	uint64_t timeout_tsc;	/* local ACK timeout, 0 = infinite */
	uint64_t rnr_tsc;	/* min_rnr_timer of the peer, from its NAK */
	struct ib_swqe_state *swqe;
	uint16_t udp_sport;
	struct ib_req req;
	struct ib_comp comp;
	struct ib_cc cc;
	struct ib_path path;
	struct ib_rp rp;	/* DCQCN reaction and notification point */
	struct ib_resp resp;	/* its arrays last */
	struct ib_wr_batch wrb;		/* extended post, under sq_lock */
};

/* The unions rely on each extended object beginning with the classic one. */
_Static_assert(offsetof(struct ib_cq, ibv_ex) == offsetof(struct ib_cq, ibv),
	       "ib_cq union");
_Static_assert(offsetof(struct ibv_cq_ex, cqe) == offsetof(struct ibv_cq, cqe) &&
	       offsetof(struct ibv_cq_ex, mutex) == offsetof(struct ibv_cq, mutex) &&
	       offsetof(struct ibv_cq_ex, async_events_completed) ==
	       offsetof(struct ibv_cq, async_events_completed),
	       "ibv_cq_ex does not begin with ibv_cq's members");
_Static_assert(offsetof(struct ib_qp, ibv_ex.qp_base) ==
	       offsetof(struct ib_qp, ibv), "ibv_qp_ex does not begin with ibv_qp");

TAILQ_HEAD(ib_qp_list, ib_qp);

/*
 * The engine's lines of a QP (its state, the run lists through the
 * responder's scalars), fetched ahead of use: for the next QP of the
 * active list while one runs. A prefetch of a QP freed meanwhile is
 * harmless.
 */
#define IB_QP_HOT_LINES \
	((offsetof(struct ib_qp, resp.rd) - offsetof(struct ib_qp, next) + \
	  RTE_CACHE_LINE_SIZE - 1) / RTE_CACHE_LINE_SIZE)

static inline void
ib_qp_prefetch(const struct ib_qp *qp)
{
	const char *hot = (const char *)&qp->next;
	unsigned int i;

	rte_prefetch0(&qp->attr.qp_state);
	for (i = 0; i < IB_QP_HOT_LINES; i++)
		rte_prefetch0(hot + i * RTE_CACHE_LINE_SIZE);
}

/*
 * Where a QP is for the engine: on no list (nothing to do), on the active
 * list (visited every pass: it can send, answer or flush now), or on the
 * waiting list (it only waits, for ACKs or a timer: a few of them are
 * visited each pass, and a frame for one or a doorbell moves it back).
 */
enum ib_qp_sched {
	IB_QP_IDLE,
	IB_QP_ACTIVE,
	IB_QP_WAITING,
};


/*
 * A multicast group, keyed by its GID: on RoCEv2 the IPv6 multicast
 * address itself (ff00::/8, RFC 4291 2.7), an IPv4 one as its IPv4-mapped
 * GID (::ffff:224.0.0.0/4, RFC 4291 2.5.5.2).
 */
struct ib_mcast_group {
	union ibv_gid gid;
	uint32_t nqp;			/* 0: the slot is free */
	struct ib_qp *qps[IB_MAX_MCAST_QPS];
};

/*
 * A device's share of one engine: the QPs that engine owns on the device,
 * their run lists, its receive and transmit queue pair on the port and
 * what it queued for transmission, and its counters. Only that engine
 * touches it (doorbells and hand-offs arrive through the rings), so none
 * of it is shared between cores.
 */
struct ib_shard {
	struct ib_dev *dev;
	struct ib_engine *eng;		/* NULL until an engine serves it */
	uint16_t queue;			/* its RX/TX queue pair on the port */
	uint16_t id;			/* == the engine's id */
	uint32_t nqp;			/* QPs placed here (control path) */
	struct rte_ring *db_ring;	/* QPNs with new work, MP/SC */
	struct rte_ring *handoff;	/* frames other engines took in for
					 * its QPs, MP/SC */
	struct rte_ring *self;		/* frames it sent to the device's own
					 * address, back to its receive side */
	struct rte_mempool_cache *mc;	/* its mbufs of dev->pool, for
					 * threads without an lcore cache */
	struct ib_wake wake;		/* a frame arrived: wake the engine */
	struct ib_qp_list active;
	struct ib_qp_list waiting;	/* QPs that wait for ACKs or timers */
	uint32_t nactive;
	uint32_t nack;
	uint32_t tx_n;
	uint32_t tx_clean;		/* tx_pending frames already faulted */
	uint64_t tx_queued;		/* frames ever queued: the engine's work */
	uint64_t tx_hold;		/* inline: polls leave tx_pending to the
					 * program's next post until this TSC */
	uint32_t tx_held;		/* ... its first tx_held frames */
	uint32_t tx_ack_end;		/* an ACK queued since the last flush
					 * covers a message's last packet */
	uint32_t loop_unread;		/* it sent frames to itself (a loopback
					 * port's RX queue, its `self` ring)
					 * since its last receive: they wake
					 * no sleeping loop */
	uint64_t now;			/* the running pass's TSC, else 0 */
	uint32_t pass_rand;		/* xorshift state: passes timed */
	uint32_t pass_id;		/* passes begun */
	uint32_t posts;			/* inline posts that drove it */
	uint32_t post_streak;		/* ... since its last full pass */
	uint64_t rtt_hint;		/* srtt after the last RTT sample */
	struct ib_qp *ack_qps[IB_RX_BURST];	/* ACKs coalesced in a burst */
	struct ib_qp *hot[IB_HOT_MAX];	/* its QPs with db_hot set */
	uint32_t nhot;
	uint64_t hot_next;		/* TSC of the next look for cold ones */
	struct rte_mbuf *tx_pending[IB_TX_PENDING];
	uint32_t tx_nseal;		/* of them, frames ib_tx_flush seals */
	struct rte_mbuf *tx_seal[IB_TX_PENDING];
	uint64_t cnt[IB_CNT_NUM] __rte_cache_aligned;
} __rte_cache_aligned;

struct ib_dev {
	struct ib_dev_conf conf;
	uint16_t port_id;
	struct rte_device *rte_dev;	/* the port's device */
	uint8_t dma;		/* MRs are registered for DMA (ib_dma.c) */
	uint8_t dma_pci;	/* the port is a PCI function */
	uint8_t tx_chains;	/* the port takes chained mbufs */
	uint8_t tx_reclaims;	/* it frees sent mbufs when asked (or at once) */
	uint8_t tx_gathers;	/* its copy reads chains as they are (af_packet) */
	uint8_t ring_loop;	/* the embedded loopback's net_ring */
	uint8_t icrc_skip;	/* frames sent unsealed, marked (ib_unsealed) */
	uint8_t linked;		/* hca_port_linked ran since the link came up */
	uint8_t link_seen;	/* ... once at least (hca_port_reconnect) */
	uint8_t reconnecting;	/* hca_port_reconnect runs */
	/* Port events (IBV_EVENT_PORT_ACTIVE, _ERR) to the contexts open on
	 * the device: their async queues, and the link as last seen by the
	 * watch on EAL's interrupt thread (ib_dev.c, port_watch).
	 */
	rte_spinlock_t port_ev_lock;
	uint8_t port_up;
	uint8_t port_watching;	/* its alarm is set */
	uint32_t nport_ev;
	struct ib_evq *port_ev[IB_PORT_EV_MAX];
	uint32_t zc_min;	/* zero-copy payloads from this size; 0: off */
	struct rte_ether_addr mac;
	union ibv_gid gid[IB_MAX_GID];	/* RoCE v2 GID table */
	uint32_t ngid;
	uint64_t guid;		/* network order, EUI-64 from the MAC */
	enum ibv_mtu active_mtu;
	struct rte_mempool *pool;
	uint32_t nsh;		/* shards: engines with a queue pair here */
	uint16_t qstride;	/* shard k on queue pair k * qstride */
	int attached;		/* its shards are on their engines */

	/* Resource tables (control path, under ctl_lock). */
	rte_spinlock_t ctl_lock;
	struct ib_qp **qp_tbl;
	uint32_t next_qpn;
	uint32_t nqp;
	struct ib_mr **mr_tbl;
	uint8_t *mr_gen;
	uint32_t next_mr;
	uint32_t nmw;			/* memory windows allocated */

	/* Engine side, shared by its engines (slow paths, under locks). */
	struct rte_ring *inject;	/* frames from dpib_inject(), MP/SC */
	struct ib_mcast_group mcast[IB_MAX_MCAST_GRP];
	FILE *capture;			/* DPIB_CAPTURE: frames sent, pcap */
	struct ib_fault *fault;		/* fault injection, or NULL */
	rte_spinlock_t dbg_lock;	/* capture and fault, across engines */
	rte_spinlock_t neigh_lock;	/* the table, across engines */
	struct ib_dev *next;
	struct ib_neigh *neigh;		/* ARP/ND table (ib_neigh.c) */
	uint32_t neigh_gen;		/* bumped when a learned MAC changes */
	struct ib_dcqcn_dev dcqcn;	/* DCQCN timers, line rate */
	int rx_intr;			/* port configured with Rx interrupts */

	struct ib_shard sh[IB_MAX_ENGINES];
};

/*
 * The engine whose pass this thread runs (0 outside passes: control calls
 * run while no engine does, or on engine 0's behalf).
 */
extern __thread uint32_t ib_self __attribute__((tls_model("initial-exec")));

/*
 * rte_lcore_id() read once per thread: EAL's variable lives in another
 * shared object, whose thread-local storage this one reaches through
 * __tls_get_addr (1.5 % of the engine's cycles, on every mbuf allocated
 * and freed). A thread's lcore does not change: dpib registers none.
 */
extern __thread uint64_t ib_lcore_seen __attribute__((tls_model("initial-exec")));

static inline unsigned int
ib_lcore_id(void)
{
	uint64_t v = ib_lcore_seen;

	if (unlikely(v == 0)) {
		v = (uint64_t)rte_lcore_id() + 1;
		ib_lcore_seen = v;
	}
	return (unsigned int)(v - 1);
}

/* This thread's shard of @dev: what it transmits on, what it counts in. */
/*
 * A spinlock's release on the data path: a store with release order, as
 * C11 defines an unlock (and DPDK's generic spinlock does). DPDK's x86
 * unlock is a locked exchange, which makes the caller wait for its store
 * buffer to drain: after a burst of frames written to a port's shared
 * memory (memif) that wait was a quarter of a post's time.
 */
static inline void
ib_unlock(rte_spinlock_t *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/*
 * The SQ's lock, biased to the first thread that posts (ib_post.c): that
 * thread enters with plain stores, no locked instruction, until another
 * thread posts and revokes the bias for good.
 */
#define IB_BIAS_OFF	UINT32_MAX
extern __thread uint32_t ib_thread_tag_v __attribute__((tls_model("initial-exec")));
uint32_t ib_thread_tag_slow(void);
int ib_sq_enter_slow(struct ib_qp *qp, uint32_t me);

static inline uint32_t
ib_thread_tag(void)
{
	return likely(ib_thread_tag_v != 0) ? ib_thread_tag_v :
	       ib_thread_tag_slow();
}

/* Enter the SQ's critical section: 1 by the bias, 0 under sq_lock. */
static inline int
ib_sq_enter(struct ib_qp *qp)
{
	uint32_t me = ib_thread_tag();

	if (likely(__atomic_load_n(&qp->sq_bias, __ATOMIC_RELAXED) == me)) {
		__atomic_store_n(&qp->sq_busy, 1, __ATOMIC_RELAXED);
		__asm__ volatile("" ::: "memory");
		if (likely(__atomic_load_n(&qp->sq_bias, __ATOMIC_RELAXED) ==
			   me))
			return 1;
		__atomic_store_n(&qp->sq_busy, 0, __ATOMIC_RELEASE);
	}
	return ib_sq_enter_slow(qp, me);
}

static inline void
ib_sq_exit(struct ib_qp *qp, int biased)
{
	if (biased)
		__atomic_store_n(&qp->sq_busy, 0, __ATOMIC_RELEASE);
	else
		ib_unlock(&qp->sq_lock);
}

static inline struct ib_shard *
ib_sh(struct ib_dev *dev)
{
	return &dev->sh[ib_self];
}

/*
 * The TSC for @qp's timers and RTT samples: inside a pass, the one read at
 * its start (they need no finer grain than a pass, and a read costs as
 * much as a small packet's header); outside one, the clock.
 */
static inline uint64_t
ib_qp_now(const struct ib_qp *qp)
{
	const struct ib_shard *sh = qp->sh;

	return likely(sh != NULL && sh->now != 0) ? sh->now : rte_rdtsc();
}

static inline struct ib_qp *to_qp(struct ibv_qp *q)
{ return container_of(q, struct ib_qp, ibv); }
static inline struct ib_cq *to_cq(struct ibv_cq *c)
{ return container_of(c, struct ib_cq, ibv); }
static inline struct ib_mr *to_mr(struct ibv_mr *m)
{ return container_of(m, struct ib_mr, ibv); }
static inline struct ib_pd *to_pd(struct ibv_pd *p)
{ return container_of(p, struct ib_pd, ibv); }
static inline struct ib_srq *to_srq(struct ibv_srq *s)
{ return container_of(s, struct ib_srq, ibv); }
static inline struct ib_ah *to_ah(struct ibv_ah *a)
{ return container_of(a, struct ib_ah, ibv); }
static inline struct ib_mw *to_mw(struct ibv_mw *m)
{ return container_of(m, struct ib_mw, ibv); }

/* A CQE removed by the QP's transition to Reset: ibv_poll_cq skips it. */
#define IB_CQE_PURGED	0xffffffffu

/*
 * A CQ slot says itself whether it holds the entry of ring position @pos:
 * the engine writes the entry, then a mark into the two bytes of padding
 * that end struct ibv_wc, 1 on even laps of the ring and 2 on odd ones (a
 * zeroed ring holds none). A poll then reads the slot alone, not the
 * producer index first: one cache line from the engine's CPU per poll
 * that finds work rather than two, one after the other (what hardware CQs
 * do with their owner bit).
 */
#define IB_CQE_MARK_OFF	46
#define IB_CQE_BODY	IB_CQE_MARK_OFF	/* the bytes before the mark */

static inline uint16_t
ib_cqe_mark(const struct ib_queue *q, uint32_t pos)
{
	return (pos & q->size) ? 2 : 1;
}

static inline uint16_t *
ib_cqe_mark_at(const struct ibv_wc *e)
{
	return (uint16_t *)((uintptr_t)e + IB_CQE_MARK_OFF);
}

/* Is the entry of @pos there (published, with everything written before
 * its mark visible to the caller)?
 */
static inline int
ib_cqe_ready(const struct ib_queue *q, uint32_t pos)
{
	const struct ibv_wc *e = ib_queue_slot(q, pos);

	return __atomic_load_n(ib_cqe_mark_at(e), __ATOMIC_ACQUIRE) ==
	       ib_cqe_mark(q, pos);
}

/*
 * The CQ ring's consumer rule, for ibv_poll_cq and the extended CQ alike:
 * the first entry at or after *pos that the engine has published and that
 * a QP reset did not purge, or NULL (*pos then where the published entries
 * end). The caller holds poll_lock and consumes up to its own position.
 */
static inline const struct ibv_wc *
ib_cq_next(struct ib_cq *cq, uint32_t *pos)
{
	struct ib_queue *q = &cq->q;
	const struct ibv_wc *e;

	for (;; (*pos)++) {
		if (!ib_cqe_ready(q, *pos))
			return NULL;
		e = ib_queue_slot(q, *pos);
		if (likely(e->qp_num != IB_CQE_PURGED))
			return e;
	}
}

/*
 * @n bytes in whole path MTUs, rounded down: a shift, the MTU being a power
 * of two (a division took 2-3 % of the requester's samples).
 */
static inline uint32_t
ib_mtus(const struct ib_qp *qp, uint32_t n)
{
	return n >> rte_bsf32(qp->path.mtu);
}

/*
 * The SQ slots [comp.wqe_idx, end) went on the wire at least in part. A
 * retransmission moves req.wqe_idx back, not this end: responses to what
 * was sent before the rewind are still good.
 */
static inline uint32_t
ib_sent_end(const struct ib_qp *qp)
{
	uint32_t cur = qp->req.wqe_idx + (qp->req.offset != 0);

	return (int32_t)(qp->req.hw_idx - cur) > 0 ? qp->req.hw_idx : cur;
}

static inline int
ib_sent_any(const struct ib_qp *qp)
{
	return qp->comp.wqe_idx != ib_sent_end(qp);
}

/* Was slot @idx transmitted whole (its last packet sent) at least once? */
static inline int
ib_sent_whole(const struct ib_qp *qp, uint32_t idx)
{
	uint32_t end = (int32_t)(qp->req.hw_idx - qp->req.wqe_idx) > 0 ?
		       qp->req.hw_idx : qp->req.wqe_idx;

	return (int32_t)(end - idx) > 0;
}

static inline struct ib_send_wqe *
sq_wqe(struct ib_qp *qp, uint32_t idx)
{
	return ib_queue_slot(&qp->sq, idx);
}

/*
 * UD: the destination, copied from the AH when the WR was posted (as
 * hardware HCAs copy the address vector into the WQE), so that destroying
 * or reusing an AH never changes work already posted.
 */
static inline struct ib_encap *
sq_wqe_av(const struct ib_qp *qp, struct ib_send_wqe *w)
{
	return (struct ib_encap *)((uint8_t *)w + qp->av_off);
}

static inline struct ib_recv_wqe *
rq_wqe(struct ib_qp *qp, uint32_t idx)
{
	return ib_queue_slot(&qp->rq, idx);
}

static inline int
ib_ipv4_is_mcast(uint32_t ip_be)
{
	return (rte_be_to_cpu_32(ip_be) >> 28) == 0xe;
}

/* An IPv4-mapped GID (::ffff:a.b.c.d, RFC 4291 2.5.5.2): RoCEv2 over IPv4. */
static inline int
ib_gid_is_v4(const union ibv_gid *gid)
{
	static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(gid->raw, v4map, sizeof(v4map)) == 0;
}

static inline void
ib_count(struct ib_dev *dev, enum ib_counter c)
{
	ib_sh(dev)->cnt[c]++;
}

/*
 * The mbuf cache this thread uses for the device's pool: its lcore's, as
 * the PMD uses it too (a buffer the port just freed is reused while still
 * in the CPU's cache; a cache the PMD never allocates from would turn the
 * buffers over cold: -35 % for 64 KiB WRITEs over af_packet), else, on a
 * thread that is no lcore (an application thread driving an engine in
 * inline mode), the shard's.
 */
static inline struct rte_mempool_cache *
ib_mcache(struct ib_dev *dev)
{
	struct rte_mempool_cache *c =
		rte_mempool_default_cache(dev->pool, ib_lcore_id());

	return likely(c != NULL) ? c : ib_sh(dev)->mc;
}

/* A packet buffer from this thread's cache of the device's pool. */
static inline struct rte_mbuf *
ib_mbuf_alloc(struct ib_dev *dev)
{
	struct rte_mbuf *m;

	if (unlikely(rte_mempool_generic_get(dev->pool, (void **)&m, 1,
					     ib_mcache(dev)) != 0))
		return NULL;
	rte_pktmbuf_reset(m);
	return m;
}

/* ... and back (rte_pktmbuf_free, with the shard's cache). */
static inline void
ib_mbuf_free(struct ib_dev *dev, struct rte_mbuf *m)
{
	struct rte_mbuf *next;

	while (m != NULL) {
		next = m->next;
		m = rte_pktmbuf_prefree_seg(m);
		if (likely(m != NULL))
			rte_mempool_generic_put(m->pool, (void **)&m, 1,
				m->pool == dev->pool ? ib_mcache(dev) :
				rte_mempool_default_cache(m->pool,
							  ib_lcore_id()));
		m = next;
	}
}

/* A counter summed over the device's shards (control path). */
static inline uint64_t
ib_count_read(const struct ib_dev *dev, enum ib_counter c)
{
	uint64_t v = 0;
	uint32_t i;

	for (i = 0; i < IB_MAX_ENGINES; i++)
		v += __atomic_load_n(&dev->sh[i].cnt[c], __ATOMIC_RELAXED);
	return v;
}

#endif
