/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_HCA_H
#define IB_HCA_H

/*
 * Private interface of the dpib HCA driver: resource objects, the engine,
 * and the functions each file exports to the others, grouped by file.
 *
 * Verbs objects are embedded first in each driver object (as rdma-core
 * providers do) and recovered with the to_*() helpers.
 */

#include <stdint.h>
#include <stdbool.h>
#include <sys/queue.h>
#include <infiniband/verbs.h>
#include <rte_common.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_spinlock.h>
#include <rte_log.h>

#include "ib_queue.h"
#include "ib_wire.h"
#include "ib_opcode.h"
#include "ib_counters.h"

extern int ib_logtype;
extern int ib_logtype_dp;

#define IB_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, ib_logtype, "%s(): " fmt "\n", \
		__func__, ##__VA_ARGS__)
#define IB_DP_LOG(level, fmt, ...) \
	RTE_LOG_DP(level, PMD, "ib: %s(): " fmt "\n", __func__, ##__VA_ARGS__)

/* Device limits reported by ibv_query_device and enforced at creation. */
#define IB_MAX_QP		65536
#define IB_MAX_MR		65536
#define IB_MAX_QP_WR		16384
#define IB_MAX_SGE		32
#define IB_MAX_CQE		65536
#define IB_MAX_INLINE		256
#define IB_MAX_RD_ATOMIC	16
#define IB_MAX_MSG_SZ		(1u << 31)
#define IB_MAX_PD		65536
#define IB_QPN_BASE		0x11	/* 0 and 1 are the special QPs */

#define IB_TX_BURST		32
#define IB_TX_PENDING		512	/* mbufs built but not yet taken by the port */
#define IB_RX_BURST		32
#define IB_REQ_BUDGET		32	/* packets one QP may send per engine pass */
#define IB_MBUF_DATA		(4096 + 256 + RTE_PKTMBUF_HEADROOM)
#define IB_HDR_ROOM		(RTE_ETHER_HDR_LEN + 20 + 8)	/* Eth + IPv4 + UDP */

struct ib_dev;
struct ib_engine;

/* Device configuration, filled by lib/verbs from the config file. */
struct ib_dev_conf {
	char name[64];		/* dpibN */
	char port[256];		/* vdev devargs or PCI address */
	uint32_t ip;		/* IPv4, network order */
	uint32_t mtu;		/* Ethernet MTU of the port */
	int loopback;		/* the embedded loopback device */
	int lcore;		/* engine lcore */
	int poll_mode;		/* 1: engine never sleeps (benchmarks) */
};

struct ib_pd {
	struct ibv_pd ibv;
	uint32_t refcnt;	/* MRs and QPs in it */
};

struct ib_mr {
	struct ibv_mr ibv;
	uint64_t iova;		/* start of the region as keys address it */
	uint8_t *addr;
	uint64_t length;
	uint32_t access;
	uint32_t key;		/* index << 8 | generation */
};

struct ib_cq {
	struct ibv_cq ibv;
	struct ib_dev *dev;
	struct ib_queue q;	/* of struct ibv_wc; engine produces */
	rte_spinlock_t poll_lock;	/* application threads only */
	uint32_t refcnt;		/* QPs using it */
};

/* Send WQE as the application writes it into the SQ. */
struct ib_send_wqe {
	uint64_t wr_id;
	uint32_t opcode;	/* enum ibv_wr_opcode */
	uint32_t flags;		/* IBV_SEND_*, SIGNALED resolved with sq_sig_all */
	uint32_t length;	/* total bytes of the message */
	uint32_t num_sge;	/* 0 with IBV_SEND_INLINE */
	rte_be32_t imm;
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	union {
		struct ibv_sge sge[0];
		uint8_t inline_data[0];
	};
};

struct ib_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;
	struct ibv_sge sge[0];
};

/* Engine-private bookkeeping of each SQ slot. */
struct ib_swqe_state {
	uint32_t first_psn;
	uint32_t last_psn;	/* last PSN of the request (READ: of its responses) */
	uint32_t npkts;
	uint32_t status;	/* enum ibv_wc_status the WQE completes with */
};

/* A gather/scatter position inside a WQE's SGE list. */
struct ib_sge_cursor {
	uint32_t idx;
	uint32_t off;
};

/* Where the QP sends to: set at RTR (IBA 10.2.4 primary path). */
struct ib_path {
	uint8_t hdr[IB_HDR_ROOM];	/* Eth + IPv4 + UDP template */
	uint32_t mtu;			/* path MTU in bytes */
	uint32_t dest_qpn;
};

struct ib_req {
	uint32_t wqe_idx;	/* next SQ slot to transmit */
	uint32_t offset;	/* bytes of that WQE already sent */
	uint32_t psn;		/* next PSN to send */
	struct ib_sge_cursor cur;
	uint32_t rd_atomic;	/* READ/atomic requests in flight */
	uint64_t wait_until;	/* RNR back-off: no sending before (TSC) */
};

struct ib_comp {
	uint32_t wqe_idx;	/* oldest SQ slot not yet completed */
	uint32_t read_off;	/* READ response bytes placed for that WQE */
	struct ib_sge_cursor cur;
	uint32_t acked_psn;	/* last PSN the responder acknowledged */
	uint64_t deadline;	/* retransmit timer (TSC), 0 when idle */
	uint32_t retry_left;
	uint32_t rnr_left;
};

/* A READ the responder still has to answer (IBA 9.7.4.1.6). */
struct ib_read_job {
	uint64_t va;
	uint32_t rkey;
	uint32_t length;
	uint32_t offset;	/* bytes already sent */
	uint32_t psn;		/* of the next response packet */
};

#define IB_MAX_READ_JOBS	16

struct ib_resp {
	uint32_t epsn;		/* expected PSN */
	uint32_t msn;
	uint32_t last_op_mask;	/* inside a multi-packet SEND or WRITE */
	uint8_t nak_seq_sent;
	uint8_t ack_pending;	/* an ACK of ack_psn waits for the burst end */
	uint32_t ack_psn;
	/* Current SEND: the receive WQE being filled. */
	int have_rwqe;
	uint32_t rwqe_idx;
	uint32_t recv_off;
	struct ib_sge_cursor cur;
	/* Current WRITE. */
	struct ib_mr *wmr;
	uint64_t wva;
	uint32_t wremain;
	uint32_t wlen;
	/* READ responses to send, a ring of IB_MAX_READ_JOBS. */
	struct ib_read_job rd[IB_MAX_READ_JOBS];
	uint32_t rd_head, rd_tail;
};

struct ib_qp {
	struct ibv_qp ibv;
	struct ib_dev *dev;
	struct ib_cq *scq, *rcq;

	/* Post path (application threads). */
	struct ib_queue sq;
	struct ib_queue rq;
	rte_spinlock_t sq_lock;
	rte_spinlock_t rq_lock;
	uint32_t max_send_sge, max_recv_sge, max_inline;
	int sq_sig_all;
	uint32_t db_armed;	/* queued or active on the engine */

	/* Attributes as set by ibv_modify_qp, for ibv_query_qp. */
	struct ibv_qp_attr attr;
	struct ibv_qp_cap cap;

	/* Engine side. */
	struct ib_path path;
	struct ib_swqe_state *swqe;
	struct ib_req req;
	struct ib_comp comp;
	struct ib_resp resp;
	uint64_t timeout_tsc;	/* local ACK timeout, 0 = infinite */
	uint64_t rnr_tsc;	/* min_rnr_timer of the peer, from its NAK */
	int active;		/* on the engine's active list */
	uint32_t idle_passes;	/* engine passes with nothing to do */
	TAILQ_ENTRY(ib_qp) next;
};

TAILQ_HEAD(ib_qp_list, ib_qp);

struct ib_dev {
	struct ib_dev_conf conf;
	uint16_t port_id;
	struct rte_ether_addr mac;
	union ibv_gid gid;
	uint64_t guid;		/* network order, EUI-64 from the MAC */
	enum ibv_mtu active_mtu;
	struct rte_mempool *pool;
	struct ib_engine *eng;

	/* Resource tables (control path, under ctl_lock). */
	rte_spinlock_t ctl_lock;
	struct ib_qp **qp_tbl;
	uint32_t next_qpn;
	uint32_t nqp;
	struct ib_mr **mr_tbl;
	uint8_t *mr_gen;
	uint32_t next_mr;

	/* Engine side. */
	struct rte_ring *db_ring;	/* QPNs with new work, MP/SC */
	struct rte_mbuf *tx_pending[IB_TX_PENDING];
	uint32_t tx_n;
	struct ib_qp_list active;
	struct ib_qp *ack_qps[IB_RX_BURST];	/* ACKs coalesced in a burst */
	uint32_t nack;
	uint64_t cnt[IB_CNT_NUM];
	struct ib_dev *next;
};

static inline struct ib_qp *to_qp(struct ibv_qp *q)
{ return container_of(q, struct ib_qp, ibv); }
static inline struct ib_cq *to_cq(struct ibv_cq *c)
{ return container_of(c, struct ib_cq, ibv); }
static inline struct ib_mr *to_mr(struct ibv_mr *m)
{ return container_of(m, struct ib_mr, ibv); }
static inline struct ib_pd *to_pd(struct ibv_pd *p)
{ return container_of(p, struct ib_pd, ibv); }

static inline struct ib_send_wqe *
sq_wqe(struct ib_qp *qp, uint32_t idx)
{
	return ib_queue_slot(&qp->sq, idx);
}

static inline struct ib_recv_wqe *
rq_wqe(struct ib_qp *qp, uint32_t idx)
{
	return ib_queue_slot(&qp->rq, idx);
}

static inline void
ib_count(struct ib_dev *dev, enum ib_counter c)
{
	dev->cnt[c]++;
}

/* ib_dev.c */
int ib_dev_create(const struct ib_dev_conf *conf, struct ib_dev **out);
void ib_dev_destroy(struct ib_dev *dev);
int ib_dev_query(struct ib_dev *dev, struct ibv_device_attr *attr);
int ib_dev_query_port(struct ib_dev *dev, struct ibv_port_attr *attr);
enum ibv_mtu ib_mtu_from_eth(uint32_t eth_mtu);

/* ib_mr.c */
int ib_mr_reg(struct ib_dev *dev, struct ib_pd *pd, void *addr, size_t len,
	      uint64_t iova, unsigned int access, struct ib_mr **out);
int ib_mr_dereg(struct ib_dev *dev, struct ib_mr *mr);
struct ib_mr *ib_mr_lookup(struct ib_dev *dev, uint32_t key);
int ib_mr_check(struct ib_mr *mr, struct ibv_pd *pd, uint64_t va,
		uint64_t len, unsigned int access);
int ib_sge_copy(struct ib_dev *dev, struct ibv_pd *pd,
		const struct ibv_sge *sge, uint32_t nsge,
		struct ib_sge_cursor *cur, uint8_t *buf, uint32_t len,
		int to_sge);
void ib_sge_seek(const struct ibv_sge *sge, uint32_t nsge,
		 struct ib_sge_cursor *cur, uint32_t len);

/* ib_cq.c */
int ib_cq_create(struct ib_dev *dev, int cqe, struct ib_cq **out);
int ib_cq_destroy(struct ib_cq *cq);
int ib_cq_poll(struct ibv_cq *ibcq, int n, struct ibv_wc *wc);
int ib_cq_push(struct ib_cq *cq, const struct ibv_wc *wc);

/* ib_qp.c */
int ib_qp_mask_ok(enum ibv_qp_type type, enum ibv_qp_state cur,
		  enum ibv_qp_state next, int mask);
int ib_qp_create(struct ib_dev *dev, struct ibv_pd *pd,
		 struct ibv_qp_init_attr *init, struct ib_qp **out);
int ib_qp_modify(struct ib_qp *qp, struct ibv_qp_attr *attr, int mask);
int ib_qp_query(struct ib_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init);
int ib_qp_destroy(struct ib_qp *qp);
void ib_qp_to_error(struct ib_qp *qp);
void ib_qp_flush(struct ib_qp *qp);

/* ib_post.c */
int ib_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad);
int ib_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad);

/* ib_engine.c */
int ib_engine_attach(struct ib_dev *dev);
void ib_engine_detach(struct ib_dev *dev);
int ib_engine_exec(struct ib_dev *dev, void (*fn)(void *), void *arg);
void ib_engine_quiesce(struct ib_dev *dev);
void ib_engine_doorbell(struct ib_qp *qp);
void ib_engine_activate(struct ib_qp *qp);
int ib_engine_poll(struct ib_dev *dev);
void ib_engine_shutdown(void);

/* ib_net.c */
struct rte_mbuf *ib_pkt_alloc(struct ib_qp *qp, uint8_t opcode,
			      uint32_t paylen, uint8_t **bth, uint8_t **payload);
void ib_pkt_bth(uint8_t *bth, uint8_t opcode, int se, uint32_t qpn,
		int ackreq, uint32_t psn);
int ib_tx(struct ib_dev *dev, struct rte_mbuf *m);
int ib_tx_room(const struct ib_dev *dev);
void ib_tx_flush(struct ib_dev *dev);
void ib_rx(struct ib_dev *dev, struct rte_mbuf *m);
int ib_path_set(struct ib_dev *dev, uint32_t qpn, const struct ibv_ah_attr *ah,
		uint8_t hdr[IB_HDR_ROOM]);
uint32_t ib_icrc(const uint8_t *ip, uint32_t len);
uint32_t ib_icrc_inplace(uint8_t *ip, uint32_t len);

/* ib_req.c: requester */
void ib_req_run(struct ib_qp *qp);
void ib_req_rewind(struct ib_qp *qp, uint32_t psn);

/* ib_resp.c: responder */
void ib_resp_rx(struct ib_qp *qp, uint8_t *bth, uint32_t paylen);
void ib_resp_run(struct ib_qp *qp);
void ib_send_ack(struct ib_qp *qp, uint8_t syndrome, uint32_t psn);
void ib_resp_flush_acks(struct ib_dev *dev);

/* ib_comp.c: completer */
void ib_comp_rx(struct ib_qp *qp, uint8_t *bth, uint32_t paylen);
void ib_comp_timer(struct ib_qp *qp, uint64_t now);
void ib_comp_kick(struct ib_qp *qp);
int ib_qp_busy(const struct ib_qp *qp);

#endif /* IB_HCA_H */
