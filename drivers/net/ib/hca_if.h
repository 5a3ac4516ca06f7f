/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef HCA_IF_H
#define HCA_IF_H

/*
 * The HCA interface: all that lib/verbs may know of the driver. It speaks
 * in verbs objects (struct ibv_*, the public ABI) and opaque handles: a
 * device (struct ib_dev) and an event queue (struct ib_evq) are never
 * looked into from outside. Errors are errno values: functions returning
 * int return 0 or a positive errno, functions returning a pointer return
 * NULL with errno set (docs/architecture.md, the interface).
 */
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <infiniband/verbs.h>

#include "ib_conf.h"

struct ib_dev;
struct ib_evq;

/* ib_obj.c: verbs objects, created and destroyed with their references */
struct ibv_pd *hca_alloc_pd(struct ibv_context *ctx);
int hca_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *hca_mr_of_key(struct ib_dev *dev, uint32_t key);
struct ibv_mr *hca_reg_mr(struct ib_dev *dev, struct ibv_pd *pd, void *addr,
			  size_t length, uint64_t iova, unsigned int access);
int hca_rereg_mr(struct ib_dev *dev, struct ibv_mr *mr, int flags,
		 struct ibv_pd *pd, void *addr, size_t length, int access);
int hca_dereg_mr(struct ib_dev *dev, struct ibv_mr *mr);
struct ibv_mw *hca_alloc_mw(struct ib_dev *dev, struct ibv_pd *pd,
			    enum ibv_mw_type type);
int hca_dealloc_mw(struct ib_dev *dev, struct ibv_mw *mw);
struct ibv_cq *hca_create_cq(struct ib_dev *dev, struct ibv_context *ctx,
			     int cqe, void *cq_context,
			     struct ibv_comp_channel *channel,
			     struct ib_evq *channel_evq, struct ib_evq *async);
int hca_destroy_cq(struct ibv_cq *cq);
int hca_resize_cq(struct ibv_cq *cq, int cqe);
struct ibv_qp *hca_create_qp(struct ib_dev *dev, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *init,
			     struct ib_evq *async);
/* QP 1 of the device: a UD QP with the GSI Q_Key taking CM MADs (EBUSY
 * when it exists already).
 */
struct ibv_qp *hca_create_gsi_qp(struct ib_dev *dev, struct ibv_pd *pd,
				 struct ibv_qp_init_attr *init,
				 struct ib_evq *async);
int hca_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int hca_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init);
int hca_destroy_qp(struct ibv_qp *qp);
struct ibv_srq *hca_create_srq(struct ib_dev *dev, struct ibv_pd *pd,
			       struct ibv_srq_init_attr *init,
			       struct ib_evq *async);
int hca_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int hca_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int hca_destroy_srq(struct ibv_srq *srq);
struct ibv_ah *hca_create_ah(struct ib_dev *dev, struct ibv_pd *pd,
			     struct ibv_ah_attr *attr);
int hca_destroy_ah(struct ibv_ah *ah);
int hca_init_ah_from_wc(struct ib_dev *dev, uint8_t port_num,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah_attr);
int hca_mcast(struct ibv_qp *qp, const union ibv_gid *gid, int attach);

/* ib_event.c: event queues (a context's async events, a channel's) */
struct ib_evq *ib_evq_async(void);
struct ib_evq *ib_evq_channel(void);
void ib_evq_free(struct ib_evq *e);
int ib_evq_fd(const struct ib_evq *e);
int ib_cq_event_get(struct ib_evq *channel, struct ibv_cq **cq,
		    void **cq_context);
int ib_async_event_get(struct ib_evq *async, struct ibv_async_event *event);

/* ib_dev.c: a device, brought up from its configuration */
int ib_dev_create(const struct ib_dev_conf *conf, struct ib_dev **out);
int ib_dev_query(struct ib_dev *dev, struct ibv_device_attr *attr);
int ib_dev_query_port(struct ib_dev *dev, struct ibv_port_attr *attr);
int hca_port_events(struct ib_dev *dev, struct ib_evq *async, int on);
void hca_port_watch_stop(void);
void ib_dev_port_stats(struct ib_dev *dev);
const struct ib_dev_conf *hca_conf(const struct ib_dev *dev);
int hca_gid(const struct ib_dev *dev, uint32_t index, union ibv_gid *gid);
uint32_t hca_gid_count(const struct ib_dev *dev);
__be64 hca_guid(const struct ib_dev *dev);
void hca_mac(const struct ib_dev *dev, uint8_t mac[6]);
uint16_t hca_port_id(const struct ib_dev *dev);
unsigned int hca_mbufs_in_use(const struct ib_dev *dev);
unsigned int hca_active_mtu(const struct ib_dev *dev);
int hca_icrc_computed(const struct ib_dev *dev);
uint32_t hca_cc_line_mbps(const struct ib_dev *dev);
int hca_counters(struct ib_dev *dev, const char *const **names,
		 uint64_t *values, int n);
/*
 * Runs @fn(@arg) once on EAL's interrupt thread, the thread that handles a
 * memif peer's connection, and waits for it: up to @wait_ms, after which
 * it runs on the caller's thread instead (never twice, never on both).
 */
void hca_run_on_intr_thread(void (*fn)(void *), void *arg,
			    unsigned int wait_ms);
int ib_inject(struct ib_dev *dev, const void *frame, uint32_t len);
/* The MAC of the host at @gid as this device's ARP/ND knows it: 0, or
 * EAGAIN while being resolved (asked for here), EHOSTUNREACH when it did
 * not answer, EINVAL for an address ARP/ND cannot resolve.
 */
int hca_neigh_query(struct ib_dev *dev, const union ibv_gid *gid,
		    uint8_t mac[6]);
struct hca_engine_stats {
	uint32_t qps, queue;
	uint64_t rx_packets, tx_packets, rx_handed, cycles;
};
uint32_t hca_engines(const struct ib_dev *dev);
void hca_engine_stats(const struct ib_dev *dev, uint32_t k,
		      struct hca_engine_stats *st);
uint32_t hca_qp_engine(struct ibv_qp *qp);
int hca_engine_lend(struct ib_dev *dev, void (*fn)(void *), void *arg);
/* The port's link is up: ready what its first frames would pay for. */
void hca_port_linked(struct ib_dev *dev);
void hca_port_reconnect(struct ib_dev *dev);
int hca_mr_dma(struct ibv_mr *mr);
uint32_t ib_dcqcn_rates(struct ib_dev *dev, uint32_t *qpn, uint32_t *mbps,
			uint32_t max);

/* The data path, installed in each context's ops: rings and doorbells */
int ib_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad);
int ib_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad);
int ib_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad);
int ib_cq_poll(struct ibv_cq *ibcq, int n, struct ibv_wc *wc);
int ib_cq_req_notify(struct ibv_cq *ibcq, int solicited_only);
int ib_bind_mw1(struct ibv_qp *ibqp, struct ibv_mw *mw,
		struct ibv_mw_bind *bind);

/* ib_cq_ex.c, ib_qp_ex.c: the extended CQ and the ibv_wr_* batch */
int ib_cq_ex_check(const struct ibv_cq_init_attr_ex *attr);
int ib_cq_ex_enable(struct ibv_cq *cq, uint64_t wc_flags);
struct ibv_cq_ex *ib_cq_ex(struct ibv_cq *cq);
uint64_t ib_clock_raw(void);
int ib_qp_ex_check(const struct ibv_qp_init_attr_ex *attr);
void ib_qp_ex_enable(struct ibv_qp *qp);
struct ibv_qp_ex *ib_qp_ex(struct ibv_qp *qp);

/* The configuration's value lists (ib_kv.c, ib_fault.c, ib_dcqcn.c) */
typedef int (*ib_kv_fn)(const char *name, const char *val, void *arg,
			char *why, size_t len);
int ib_kv_walk(const char *spec, ib_kv_fn fn, void *arg, char *why,
	       size_t len);
int ib_fault_parse(const char *spec, struct ib_fault_rates *r);
int ib_dcqcn_parse(const char *spec, struct ib_dcqcn_conf *c, char *why,
		   size_t len);
void ib_dcqcn_conf_default(struct ib_dcqcn_conf *c);

/* Process exit (ib_engine.c, ib_memhook.c) */
void ib_engine_shutdown(void);
void ib_mem_exiting(void);

#endif
