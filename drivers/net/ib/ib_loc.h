/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_LOC_H
#define IB_LOC_H

/* What each driver file offers the others, by file. */
#include <sched.h>
#include <stdio.h>
#include <infiniband/verbs.h>
#include <rte_mbuf.h>

#include "ib_opcode.h"
#include "ib_pkt.h"
#include "ib_verbs.h"
#include "hca_if.h"

/*
 * What the requester and the completer read of each other: through these,
 * never by field (each keeps its own struct: qp->req, qp->comp).
 */
static inline uint32_t
ib_comp_acked(const struct ib_qp *qp)	/* last PSN acknowledged */
{
	return qp->comp.acked_psn;
}

static inline uint32_t
ib_comp_oldest(const struct ib_qp *qp)	/* oldest SQ slot not completed */
{
	return qp->comp.wqe_idx;
}

static inline uint32_t
ib_req_next(const struct ib_qp *qp)	/* next SQ slot to transmit */
{
	return qp->req.wqe_idx;
}

static inline uint32_t
ib_req_max_psn(const struct ib_qp *qp)	/* one past the highest PSN sent */
{
	return qp->req.max_psn;
}

/* ib_event.c */
void ib_events_forget(struct ib_evq *async, void *ibv_obj,
		      pthread_mutex_t *mutex, pthread_cond_t *cond,
		      const uint32_t *completed, const uint32_t *reported);
void ib_cq_events_forget(struct ib_cq *cq);
int ib_evq_init(struct ib_evq *e, uint32_t entries, uint32_t rec_size);
void ib_evq_fini(struct ib_evq *e);
int ib_evq_push(struct ib_evq *e, const void *rec);
int ib_evq_pop(struct ib_evq *e, void *rec);
void ib_evq_purge(struct ib_evq *e, int (*match)(const void *rec, void *arg),
		  void *arg);
void ib_async_event(struct ib_evq *e, enum ibv_event_type type, void *obj);

/* ib_dev.c */
void ib_dev_destroy(struct ib_dev *dev);
enum ibv_mtu ib_mtu_from_eth(uint32_t eth_mtu);

/* ib_mr.c */
int ib_mr_reg(struct ib_dev *dev, struct ib_pd *pd, void *addr, size_t len,
	      uint64_t iova, unsigned int access, struct ib_mr **out);
int ib_mr_dereg(struct ib_dev *dev, struct ib_mr *mr);
int ib_mr_rereg(struct ib_dev *dev, struct ib_mr *mr, int flags,
		struct ib_pd *pd, void *addr, size_t len, unsigned int access);
struct ib_mr *ib_mr_lookup(struct ib_dev *dev, uint32_t key);
int ib_mr_check(struct ib_mr *mr, struct ibv_pd *pd, uint64_t va,
		uint64_t len, unsigned int access);
uint8_t *ib_rkey_addr(struct ib_qp *qp, uint32_t rkey, uint64_t va,
		      uint64_t len, unsigned int access);
int ib_mw_alloc(struct ib_dev *dev, struct ib_pd *pd, enum ibv_mw_type type,
		struct ib_mw **out);
int ib_mw_dealloc(struct ib_dev *dev, struct ib_mw *mw);
enum ibv_wc_status ib_mw_bind_exec(struct ib_qp *qp,
				   const struct ib_send_wqe *w);
int ib_mw_invalidate(struct ib_qp *qp, uint32_t rkey, int remote);
void ib_mw_forget_qp(struct ib_qp *qp);
int ib_sge_copy(struct ib_dev *dev, struct ibv_pd *pd,
		const struct ibv_sge *sge, uint32_t nsge,
		struct ib_sge_cursor *cur, uint8_t *buf, uint32_t len,
		int to_sge);
int ib_mr_iova(const struct ib_dev *dev, struct ib_mr *mr, const uint8_t *p,
	       uint32_t len, rte_iova_t *iova);
uint8_t *ib_rkey_addr_mr(struct ib_qp *qp, uint32_t rkey, uint64_t va,
			 uint64_t len, unsigned int access,
			 struct ib_mr **mrp);
uint8_t *ib_sge_ref(struct ib_dev *dev, struct ibv_pd *pd,
		    const struct ibv_sge *sge, uint32_t nsge,
		    struct ib_sge_cursor *cur, uint32_t len, rte_iova_t *iova);
void ib_sge_seek(const struct ibv_sge *sge, uint32_t nsge,
		 struct ib_sge_cursor *cur, uint32_t len);

/* ib_cc.c: congestion window of RC requesters */
void ib_cc_init(struct ib_qp *qp);
void ib_cc_ack(struct ib_qp *qp, uint32_t n);
void ib_cc_loss(struct ib_qp *qp, int timeout);
void ib_cc_sent(struct ib_qp *qp);
void ib_cc_progress(struct ib_qp *qp);
void ib_cc_early(struct ib_qp *qp, uint64_t now);

/*
 * May the requester send another packet? Fewer than cwnd PSNs past the
 * last acknowledged one (a READ's responses included). One request is
 * always allowed when nothing is in flight, however many PSNs it spans.
 */
static inline int
ib_cc_open(const struct ib_qp *qp)
{
	return psn_diff(qp->req.psn, ib_comp_acked(qp)) - 1 <
	       (int32_t)qp->cc.cwnd;
}

/* ib_kv.c: "name=value,..." lists of the configuration */

/* May the QP send a packet now, as far as DCQCN's pacer goes? */
static inline int
ib_pace_ok(struct ib_qp *qp)
{
	return likely(!qp->rp.limited) || ib_dcqcn_may_send(qp);
}

/* ib_dma.c: MRs a NIC can DMA from */
void ib_dma_dev_init(struct ib_dev *dev);
void ib_dma_mr_attach(struct ib_mr *mr);
void ib_dma_mr_detach(struct ib_mr *mr);

/* ib_memhook.c: registered memory and the address space */
int ib_mem_hooked(void);
int ib_mem_mapped(uintptr_t lo, uintptr_t hi, int write);
int ib_mem_track(struct ib_mr *mr);
void ib_mem_untrack(struct ib_mr *mr);
void ib_mem_retrack(struct ib_mr *mr, uintptr_t lo, uintptr_t hi);

/* ib_cq.c */
int ib_cq_create(struct ib_dev *dev, int cqe, struct ib_cq **out);
int ib_cq_destroy(struct ib_cq *cq);
int ib_cq_push(struct ib_cq *cq, const struct ibv_wc *wc, int solicited);
int ib_cq_resize(struct ib_cq *cq, int cqe);
void ib_cq_purge_qp(struct ib_cq *cq, uint32_t qpn);
int ib_cq_timestamps(struct ib_cq *cq);
uint64_t ib_cq_ts_to_ns(const struct ib_cq *cq, uint64_t ts);


/* ib_srq.c */
int ib_srq_create(struct ib_dev *dev, struct ibv_srq_init_attr *init,
		  struct ib_srq **out);
int ib_srq_modify(struct ib_srq *srq, struct ibv_srq_attr *attr, int mask);
int ib_srq_query(struct ib_srq *srq, struct ibv_srq_attr *attr);
int ib_srq_destroy(struct ib_srq *srq);
int ib_srq_take(struct ib_srq *srq, struct ib_rwqe_copy *out);

/* ib_fault.c */
int ib_fault_init(struct ib_dev *dev);
void ib_fault_fini(struct ib_dev *dev);
uint32_t ib_fault_apply(struct ib_dev *dev, struct rte_mbuf **pkts,
			uint32_t n, uint32_t room);
int ib_fault_pending(const struct ib_dev *dev);
void ib_fault_nak_seq(struct ib_dev *dev, uint32_t dest_qpn);

/* ib_mcast.c */
int ib_mcast_change(struct ib_qp *qp, const union ibv_gid *gid, int attach);
void ib_mcast_forget_qp(struct ib_qp *qp);
struct ib_mcast_group *ib_mcast_lookup(struct ib_dev *dev, const uint8_t *l3);

/* ib_ah.c */
int ib_ah_create(struct ib_dev *dev, struct ibv_ah_attr *attr,
		 struct ib_ah **out);

/* ib_qp.c */
int ib_qp_mask_ok(enum ibv_qp_type type, enum ibv_qp_state cur,
		  enum ibv_qp_state next, int mask);
int ib_qp_create(struct ib_dev *dev, struct ibv_pd *pd,
		 struct ibv_qp_init_attr *init, uint32_t qpn,
		 struct ib_qp **out);
int ib_qp_modify(struct ib_qp *qp, struct ibv_qp_attr *attr, int mask);
int ib_qp_query(struct ib_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init);
int ib_qp_destroy(struct ib_qp *qp);
int ib_qp_unpublish(struct ib_qp *qp);
void ib_qp_free(struct ib_qp *qp);
void ib_qp_to_error(struct ib_qp *qp);
int ib_qp_mark_error(struct ib_qp *qp);
void ib_qp_flush_error(struct ib_qp *qp, int was);
void ib_qp_to_sqe(struct ib_qp *qp);
void ib_qp_mark_sqe(struct ib_qp *qp);
void ib_qp_flush_sq(struct ib_qp *qp);
void ib_qp_flush(struct ib_qp *qp);

/* ib_post.c */
uint32_t ib_recv_wqes_write(struct ib_queue *q, uint32_t max_sge,
			    struct ibv_recv_wr *wr, struct ibv_recv_wr **bad,
			    int *err);
int ib_post_send_stage(struct ib_qp *qp, uint32_t idx,
		       const struct ibv_send_wr *wr);

/* ib_engine.c */
int ib_engine_attach(struct ib_dev *dev);
void ib_engine_place(struct ib_qp *qp);
void ib_engine_detach(struct ib_dev *dev);
int ib_engine_exec(struct ib_dev *dev, void (*fn)(void *), void *arg);
void ib_engine_quiesce(struct ib_dev *dev);
void ib_engine_unmap_fence(void);
void ib_engine_doorbell(struct ib_qp *qp);
void ib_engine_nudge(struct ib_engine *e);
void ib_engine_activate(struct ib_qp *qp);
void ib_engine_forget(struct ib_qp *qp);
void ib_resp_ack_now(struct ib_qp *qp);
void ib_resp_ack_behind(struct ib_qp *qp);
int ib_qp_runnable(const struct ib_qp *qp);
int ib_engine_progress(void);
int ib_engine_progress_qp(struct ib_qp *qp);
int ib_engine_post_qp(struct ib_qp *qp, int ring);
int ib_engine_progress_cq(struct ib_cq *cq);
extern int ib_engine_inline;
extern int ib_membarrier;
void ib_heavy_fence(void);

/* ib_dev.c */
int ib_af_packet_iface(const char *spec, char *name, size_t len);

/* ib_place.c: an inline loop moves off a CPU another thread shares */
#define IB_PLACE_MAX_CPUS	64
#define IB_PLACE_MAX_STATES	8
struct ib_place {
	uint64_t next;		/* TSC of the next look */
	int on;			/* the loop floats and idle times are known */
	int cpu;		/* of the window under way, -1: none */
	uint64_t t0;		/* its start (TSC) */
	uint64_t cpu_ns0;	/* the thread's CPU time then */
	uint64_t idle0;		/* the CPU's idle time then (µs) */
	uint64_t window_us;
	uint32_t backoff;	/* windows doubled after moves in a row */
	uint64_t last_move;	/* TSC, 0: none yet */
	int pinned;		/* to the CPU it moved to, until unpin */
	uint64_t unpin;
	cpu_set_t allowed;	/* the loop's CPUs at its start */
	int statfd;		/* /proc/stat, without cpuidle */
	long hz;		/* its ticks per second */
	int idlefd[IB_PLACE_MAX_CPUS][IB_PLACE_MAX_STATES];
};
void ib_place_init(struct ib_place *p);
void ib_place_fini(struct ib_place *p);
int ib_place_look(struct ib_place *p, uint64_t now);

/* ib_wake.c: what wakes a sleeping engine */
void ib_wake_open(struct ib_shard *sh);
void ib_wake_close(struct ib_shard *sh);
int ib_wake_register(struct ib_shard *sh, int epfd);
void ib_wake_unregister(struct ib_shard *sh, int epfd);
void ib_wake_arm(struct ib_shard *sh, int memif);
void ib_wake_disarm(struct ib_shard *sh);
int ib_wake_armed(const struct ib_shard *sh);
void ib_wake_mask(struct ib_shard *sh);

/* ib_tx.c: header templates, packets built, the transmit buffer */
struct rte_mbuf *ib_pkt_alloc(struct ib_qp *qp, uint8_t opcode,
			      uint32_t paylen, uint8_t **bth, uint8_t **payload);
struct rte_mbuf *ib_pkt_alloc_av(struct ib_qp *qp, struct ib_encap *av,
				 uint8_t opcode, uint32_t paylen,
				 uint8_t **bth, uint8_t **payload);
void ib_pkt_bth(uint8_t *bth, uint8_t opcode, int se, uint32_t qpn,
		int ackreq, uint32_t psn);
uint16_t ib_udp_sport(uint32_t qpn);
int ib_tx(struct ib_dev *dev, struct rte_mbuf *m);
void ib_tx_reclaim(struct ib_dev *dev);
int ib_zc_settle(const uint32_t *refs, uint32_t n, size_t stride);

/* Does a payload of @len bytes leave zero-copy (`zero_copy`)? */
static inline int
ib_zc_wanted(const struct ib_dev *dev, uint32_t len)
{
	return dev->zc_min != 0 && len >= dev->zc_min;
}
struct rte_mbuf *ib_pkt_alloc_zc(struct ib_qp *qp, uint8_t opcode,
				 uint8_t *va, rte_iova_t iova, uint32_t paylen,
				 uint32_t *ref, int own, uint8_t **bth);
int ib_tx_room(struct ib_dev *dev);
int ib_tx_room_req(struct ib_dev *dev);
void ib_tx_flush(struct ib_dev *dev);
int ib_capture_open(struct ib_dev *dev, const char *path);
int ib_path_set(struct ib_dev *dev, uint32_t qpn, const struct ibv_ah_attr *ah,
		struct ib_encap *h);
int ib_hdr_resolve(struct ib_dev *dev, struct ib_encap *h);

/* ib_rx.c: receive validation and dispatch */
void ib_rx(struct ib_dev *dev, struct rte_mbuf *m);
void ib_rx_burst(struct ib_dev *dev, struct rte_mbuf **pkts, uint32_t n);
void ib_rx_handed(struct ib_dev *dev, struct rte_mbuf *m);

/* ib_icrc.c */
extern uint64_t ib_unsealed;	/* mbuf flag: sent without an ICRC */
uint32_t ib_icrc(const uint8_t *ip, uint32_t len);
uint32_t ib_icrc_inplace(uint8_t *ip, uint32_t len);
uint32_t ib_icrc_chain(struct rte_mbuf *m, uint8_t *ip, uint8_t **icrc);
void ib_icrc_seal(struct rte_mbuf *const *m, uint32_t n);
void ib_icrc_many(uint8_t *const *ip, const uint32_t *len, uint32_t *crc,
		  uint32_t n);

/* ib_req.c: requester */
void ib_req_run(struct ib_qp *qp);
void ib_req_rewind(struct ib_qp *qp, uint32_t psn);
void ib_req_recount(struct ib_qp *qp);
void ib_req_release_credit(struct ib_qp *qp, const struct ib_send_wqe *w,
			   const struct ib_swqe_state *st);
void ib_req_follow(struct ib_qp *qp, uint32_t last_psn);
void ib_req_wait(struct ib_qp *qp, uint64_t until);

/* ib_resp.c: responder */
void ib_resp_rx(struct ib_qp *qp, struct ib_pkt *p);
void ib_resp_run(struct ib_qp *qp);
void ib_send_ack(struct ib_qp *qp, uint8_t syndrome, uint32_t psn);
void ib_resp_flush_acks(struct ib_dev *dev);
int ib_resp_take_rwqe(struct ib_qp *qp);

/* ib_comp.c: completer */
void ib_comp_rx(struct ib_qp *qp, const struct ib_pkt *p);
void ib_comp_timer(struct ib_qp *qp, uint64_t now);
void ib_comp_kick(struct ib_qp *qp);
void ib_comp_go_back(struct ib_qp *qp);
void ib_comp_arm(struct ib_qp *qp);
void ib_comp_sent(struct ib_qp *qp, uint32_t last_psn);
int ib_qp_busy(const struct ib_qp *qp);

/* ib_neigh.c: IPv4 (ARP) and IPv6 (ND) neighbours, engine lcore only */
int ib_neigh_init(struct ib_dev *dev);
void ib_neigh_fini(struct ib_dev *dev);
int ib_neigh_rx(struct ib_dev *dev, struct rte_mbuf *m);
int ib_neigh_lookup(struct ib_dev *dev, uint32_t ip, struct rte_ether_addr *mac);
int ib_neigh_lookup6(struct ib_dev *dev, const uint8_t ip6[16],
		     struct rte_ether_addr *mac);
uint8_t *ib_l2_put(struct ib_dev *dev, struct rte_mbuf *m,
		   const struct rte_ether_addr *dst, uint16_t type, uint32_t len);
void ib_neigh_timer(struct ib_dev *dev, uint64_t now);
uint64_t ib_neigh_next_due(const struct ib_dev *dev);
void ib_neigh_announce(struct ib_dev *dev);
int ib_tx_raw(struct ib_dev *dev, struct rte_mbuf *m);


#endif
