/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_TEST_VERBS_H
#define DPIB_TEST_VERBS_H

/*
 * test_verbs, split by area (verbs_events.c, verbs_srq.c, verbs_qp_types.c,
 * verbs_mr.c, verbs_neigh.c; main and the objects in test_verbs.c): the
 * loopback device, one PD, a 1 MiB buffer and its MR shared by all, and
 * the helpers every area uses.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs_util.h"
#include "dpib.h"
#include "pcap.h"

static const struct pair_opts rc = {
	.buflen = 1 << 20,
	.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.sq_sig_all = 1, .max_wr = 64, .max_sge = 2, .max_inline = 64,
	.max_rd_atomic = 4, .min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 14, .retry_cnt = 7,
};

extern struct ibv_device **list;
extern struct ibv_context *ctx;
extern struct ibv_pd *pd;
extern uint8_t *buf;
extern struct ibv_mr *mr;
extern char capture_path[64];	/* DPIB_CAPTURE of this run */

#define BUF_LEN (1 << 20)

static inline struct ibv_qp *
make_qp(enum ibv_qp_type type, struct ibv_cq *scq, struct ibv_cq *rcq,
	struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .srq = srq, .qp_type = type,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = 32, .max_recv_wr = srq ? 0 : 32,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	CHECK(qp != NULL, "create_qp type %d errno %d", type, errno);
	return qp;
}

/* Reset -> RTS for RC and UC; UD needs the Q_Key instead of a path. */
static inline void
connect_qp(struct ibv_qp *qp, uint32_t dest)
{
	if (qp->qp_type == IBV_QPT_UD) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					 .qkey = 0x11111111 };

		CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_QKEY) == 0, "UD init");
		a.qp_state = IBV_QPS_RTR;
		CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "UD RTR");
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 77;
		CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0,
		      "UD RTS");
		return;
	}
	if (qp->qp_type == IBV_QPT_RC) {
		qp_connect(qp, dest, &rc, IBV_MTU_4096, 100, 100);
		return;
	}
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

		CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
		      "UC init");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dest;
		a.rq_psn = 100;
		ah_self(qp->context, &a.ah_attr);
		CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN) == 0, "UC RTR");
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 100;
		CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0,
		      "UC RTS");
	}
}

/* Two QPs of one type to RTS, each the other's destination. */
static inline void
connect_pair(struct ibv_qp *a, struct ibv_qp *b)
{
	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
}

static inline int
post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t off,
	  uint32_t len, uint64_t wr_id, int flags)
{
	struct ibv_sge sge = { (uintptr_t)buf + off, len, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = flags, .imm_data = htonl(0x1234),
		.wr.rdma = { (uintptr_t)buf + 512 * 1024 + off, mr->rkey },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static inline void
post_recv(struct ibv_qp *qp, uint32_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf + off, len, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "post_recv");
}

static inline void
expect(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st,
       struct ibv_wc *out)
{
	struct ibv_wc wc;

	CHECK(poll_one(cq, &wc, 5), "no completion for %lu",
	      (unsigned long)wr_id);
	CHECK(wc.wr_id == wr_id && wc.status == st, "wr %lu %s, want %lu %s",
	      (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status),
	      (unsigned long)wr_id, ibv_wc_status_str(st));
	if (out != NULL)
		*out = wc;
}

static inline int
fd_ready(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static inline void
wait_async(enum ibv_event_type type, void *obj, int ms)
{
	struct ibv_async_event ev;

	CHECK(fd_ready(ctx->async_fd, ms), "no async event (want %s)",
	      ibv_event_type_str(type));
	CHECK(ibv_get_async_event(ctx, &ev) == 0, "get_async_event");
	CHECK(ev.event_type == type, "event %s want %s",
	      ibv_event_type_str(ev.event_type), ibv_event_type_str(type));
	CHECK(ev.element.qp == obj, "event on another object");
	ibv_ack_async_event(&ev);
}

/* The rules, by area. */
void completion_channel_events(void);
void solicited_only_events(void);
void cq_event_wait_interrupted_as_read(void);
void destroy_cq_waits_for_ack(void);
void async_comm_est(void);
void channel_with_epoll(void);
void reset_purges_only_its_cqes(void);
void resize_cq_keeps_entries(void);
void srq_shared_and_limit(void);
void destroy_leaves_heap_clean(void);
void destroy_mid_stream_leaves_heap_clean(void);
struct ibv_ah *self_ah(void);
void ud_semantics(void);
void uc_semantics(void);
void sqd_drains_and_resumes(void);
void ud_multicast(void);
void post_limits(void);
void post_send_in_init_and_rtr(void);
void ud_sqe_recovers_and_no_comm_est(void);
void remote_operational_error(void);
void fence_waits_for_read(void);
void protection_domains_and_local_access(void);
void rereg_mr_rules(void);
void shared_pd_imports_in_process(void);
void unresolved_peer_times_out(void);
void reads_wait_for_neighbour(void);
void path_follows_neighbour_mac(void);
void first_packet_times_from_its_send(void);

#endif
