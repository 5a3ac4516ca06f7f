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

struct ib_dev;
struct ib_evq;

/* ib_obj.c: verbs objects, created and destroyed with their references */
struct ibv_pd *hca_alloc_pd(struct ibv_context *ctx);
int hca_dealloc_pd(struct ibv_pd *pd);
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

#endif
