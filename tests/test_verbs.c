/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Verbs rules on the loopback device: completion channels and events
 * (seed 002 section 8.2), asynchronous events (section 9), SRQ and its limit
 * event (section 8.1), UD and UC semantics (ibv_post_send(3) table 1, Q_Key
 * rules, GRH), SQD, Reset purging CQEs (seed 003 section 5.2), resize_cq.
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

static struct ibv_device **list;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint8_t *buf;
static struct ibv_mr *mr;

#define BUF_LEN (1 << 20)

static void
open_all(void)
{
	list = ibv_get_device_list(NULL);
	CHECK(list != NULL && list[0] != NULL, "device");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx != NULL, "open");
	pd = ibv_alloc_pd(ctx);
	buf = aligned_alloc(4096, BUF_LEN);
	CHECK(pd != NULL && buf != NULL, "pd");
	memset(buf, 0, BUF_LEN);
	mr = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(mr != NULL, "mr");
}

static struct ibv_qp *
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
static void
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
static void
connect_pair(struct ibv_qp *a, struct ibv_qp *b)
{
	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
}

static int
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

static void
post_recv(struct ibv_qp *qp, uint32_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf + off, len, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "post_recv");
}

static void
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

static int
fd_ready(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static void
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

/* Seed 002 8.2: arm, get the event through a poll()-able fd, re-arm, ack. */
static void
completion_channel_events(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq, *ev_cq;
	struct ibv_qp *a, *b;
	void *ev_ctx;
	int i;

	CHECK(ch != NULL, "create_comp_channel");
	cq = ibv_create_cq(ctx, 64, (void *)0x1234, ch, 0);
	CHECK(cq != NULL && cq->channel == ch, "create_cq with channel");
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	CHECK(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0,
	      "O_NONBLOCK");
	errno = 0;
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN,
	      "no event yet: errno %d", errno);
	for (i = 0; i < 3; i++) {
		struct ibv_wc wc;

		CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify");
		CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 64, i, 0) == 0, "post");
		CHECK(fd_ready(ch->fd, 5000), "channel fd not readable");
		CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0, "get_cq_event");
		CHECK(ev_cq == cq && ev_ctx == (void *)0x1234, "event's CQ");
		/* One shot: no second event without re-arming. */
		CHECK(!fd_ready(ch->fd, 20), "second event while disarmed");
		expect(cq, i, IBV_WC_SUCCESS, &wc);
		ibv_ack_cq_events(cq, 1);
	}
	CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "channel in use freed");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy qps");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy cq");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy channel");
}

/* solicited_only: only a SEND with IBV_SEND_SOLICITED (or an error) fires. */
static void
solicited_only_events(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, ch, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, scq, scq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, rcq, rcq, NULL);
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	connect_pair(a, b);
	post_recv(b, 4096, 4096, 1);
	post_recv(b, 8192, 4096, 2);
	CHECK(ibv_req_notify_cq(rcq, 1) == 0, "arm solicited");
	CHECK(post_send(a, IBV_WR_SEND, 0, 16, 10, 0) == 0, "unsolicited");
	expect(scq, 10, IBV_WC_SUCCESS, NULL);
	expect(rcq, 1, IBV_WC_SUCCESS, NULL);
	CHECK(!fd_ready(ch->fd, 30), "event for an unsolicited SEND");
	CHECK(post_send(a, IBV_WR_SEND, 0, 16, 11, IBV_SEND_SOLICITED) == 0,
	      "solicited");
	CHECK(fd_ready(ch->fd, 5000), "no event for a solicited SEND");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == rcq,
	      "event");
	expect(rcq, 2, IBV_WC_SUCCESS, NULL);
	expect(scq, 11, IBV_WC_SUCCESS, NULL);
	ibv_ack_cq_events(rcq, 1);
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0, "cq");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "channel");
}

struct destroy_arg {
	struct ibv_cq *cq;
	volatile int done;
};

static void *
destroy_thread(void *p)
{
	struct destroy_arg *d = p;

	CHECK(ibv_destroy_cq(d->cq) == 0, "destroy_cq");
	d->done = 1;
	return NULL;
}

/* Seed 002 8.2: a CQ whose events are not acknowledged cannot go away. */
static void
destroy_cq_waits_for_ack(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct destroy_arg d = { .cq = cq };
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	pthread_t t;
	void *ev_ctx;
	double end;

	connect_pair(a, b);
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "arm");
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 8, 1, 0) == 0, "post");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0, "event");
	CHECK(poll_one(cq, &wc, 5), "completion");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "qps");
	CHECK(pthread_create(&t, NULL, destroy_thread, &d) == 0, "thread");
	usleep(50000);
	CHECK(!d.done, "destroy_cq returned before the event was acked");
	ibv_ack_cq_events(cq, 1);
	for (end = check_now() + 5; !d.done && check_now() < end; )
		usleep(1000);
	CHECK(d.done, "destroy_cq still blocked after the ack");
	pthread_join(t, NULL);
	CHECK(ibv_destroy_comp_channel(ch) == 0, "channel");
}

/* COMM_EST on the first packet in RTR, not on UD; async_fd non-blocking. */
static void
async_comm_est(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr ia;
	struct ibv_async_event ev;

	memset(&attr, 0, sizeof(attr));
	CHECK(fcntl(ctx->async_fd, F_SETFL,
		    fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK) == 0, "nonblock");
	errno = 0;
	CHECK(ibv_get_async_event(ctx, &ev) == -1 && errno == EAGAIN,
	      "an event from nowhere");
	connect_qp(a, b->qp_num);
	/* b only to RTR: it receives but does not send. */
	{
		struct ibv_qp_attr x = { .qp_state = IBV_QPS_INIT,
			.port_num = 1, .qp_access_flags = rc.qp_access };

		CHECK(ibv_modify_qp(b, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "init");
		memset(&x, 0, sizeof(x));
		x.qp_state = IBV_QPS_RTR;
		x.path_mtu = IBV_MTU_4096;
		x.dest_qp_num = a->qp_num;
		x.rq_psn = 100;
		x.max_dest_rd_atomic = 1;
		ah_self(b->context, &x.ah_attr);
		CHECK(ibv_modify_qp(b, &x, IBV_QP_STATE | IBV_QP_AV |
				    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER) == 0, "rtr");
	}
	CHECK(ibv_query_qp(b, &attr, IBV_QP_STATE, &ia) == 0 &&
	      attr.qp_state == IBV_QPS_RTR, "b in RTR");
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 8, 5, 0) == 0, "post");
	expect(cq, 5, IBV_WC_SUCCESS, NULL);
	wait_async(IBV_EVENT_COMM_EST, b, 5000);
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 8, 6, 0) == 0, "post");
	expect(cq, 6, IBV_WC_SUCCESS, NULL);
	CHECK(!fd_ready(ctx->async_fd, 20), "COMM_EST twice");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0, "cq");
}

/* Seed 002 8.1: SRQ shared by two QPs, the limit event and its re-arming. */
static void
srq_shared_and_limit(void)
{
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr sa;
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq *srq = ibv_create_srq(pd, &si);
	struct ibv_qp *s1, *s2, *r1, *r2;
	struct ibv_recv_wr rwr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int i;

	CHECK(srq != NULL && si.attr.max_wr >= 16, "create_srq");
	s1 = make_qp(IBV_QPT_RC, cq, cq, NULL);
	s2 = make_qp(IBV_QPT_RC, cq, cq, NULL);
	r1 = make_qp(IBV_QPT_RC, cq, cq, srq);
	r2 = make_qp(IBV_QPT_RC, cq, cq, srq);
	connect_pair(s1, r1);
	connect_pair(s2, r2);
	sge.addr = (uintptr_t)buf;
	sge.length = 16;
	sge.lkey = mr->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	CHECK(ibv_post_recv(r1, &rwr, &bad) == EINVAL, "post_recv on SRQ QP");
	for (i = 0; i < 6; i++) {
		rwr.wr_id = 100 + i;
		sge.addr = (uintptr_t)buf + 4096 * (i + 1);
		CHECK(ibv_post_srq_recv(srq, &rwr, &bad) == 0, "post_srq_recv");
	}
	/* Post first, arm second (seed 002 8.1): 6 left, limit 4. */
	sa.srq_limit = 4;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "arm limit");
	CHECK(ibv_query_srq(srq, &sa) == 0 && sa.srq_limit == 4, "query");
	sa.max_wr = 64;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR) == EINVAL, "resize");
	/* Two SENDs, one through each QP: 4 left, not below 4. */
	CHECK(post_send(s1, IBV_WR_SEND, 0, 16, 1, 0) == 0, "send 1");
	CHECK(post_send(s2, IBV_WR_SEND, 0, 16, 2, 0) == 0, "send 2");
	for (i = 0; i < 4; i++)
		CHECK(poll_one(cq, &wc, 5) && wc.status == IBV_WC_SUCCESS,
		      "completion %d", i);
	CHECK(!fd_ready(ctx->async_fd, 20), "limit event at 4 of limit 4");
	/* One more: 3 < 4 fires it, once. */
	CHECK(post_send(s1, IBV_WR_SEND, 0, 16, 3, 0) == 0, "send 3");
	CHECK(poll_one(cq, &wc, 5) && poll_one(cq, &wc, 5), "completions");
	wait_async(IBV_EVENT_SRQ_LIMIT_REACHED, srq, 5000);
	CHECK(ibv_query_srq(srq, &sa) == 0 && sa.srq_limit == 0, "disarmed");
	CHECK(post_send(s2, IBV_WR_SEND, 0, 16, 4, 0) == 0, "send 4");
	CHECK(poll_one(cq, &wc, 5) && poll_one(cq, &wc, 5), "completions");
	CHECK(!fd_ready(ctx->async_fd, 20), "fired without re-arming");
	/* Arming while already below the limit fires at once. */
	sa.srq_limit = 5;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "re-arm");
	wait_async(IBV_EVENT_SRQ_LIMIT_REACHED, srq, 5000);
	CHECK(ibv_destroy_srq(srq) == EBUSY, "SRQ with QPs destroyed");
	/* An SRQ QP going to Error reports its last WQE. */
	memset(&sa, 0, sizeof(sa));
	{
		struct ibv_qp_attr x = { .qp_state = IBV_QPS_ERR };

		CHECK(ibv_modify_qp(r1, &x, IBV_QP_STATE) == 0, "to Error");
	}
	wait_async(IBV_EVENT_QP_LAST_WQE_REACHED, r1, 5000);
	CHECK(ibv_destroy_qp(s1) == 0 && ibv_destroy_qp(s2) == 0 &&
	      ibv_destroy_qp(r1) == 0 && ibv_destroy_qp(r2) == 0, "qps");
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");
	CHECK(ibv_destroy_cq(cq) == 0, "cq");
}

static struct ibv_ah *
self_ah(void)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;

	CHECK(ibv_query_gid(ctx, 1, 0, &aa.grh.dgid) == 0, "gid");
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah != NULL, "create_ah errno %d", errno);
	return ah;
}

static int
post_ud(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey,
	uint32_t off, uint32_t len, uint64_t wr_id, enum ibv_wr_opcode op)
{
	struct ibv_sge sge = { (uintptr_t)buf + off, len, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.imm_data = htonl(0xfeed),
		.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = qkey },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* UD: GRH first, Q_Key rules, path-MTU limit, AH from the work completion. */
static void
ud_semantics(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_UD, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_UD, rcq, rcq, NULL);
	struct ibv_ah *ah = self_ah(), *back;
	struct ibv_port_attr pa;
	struct ibv_wc wc;
	uint8_t *rb = buf + 65536;
	uint32_t mtu;

	connect_qp(a, 0);
	connect_qp(b, 0);
	CHECK(ibv_query_port(ctx, 1, &pa) == 0, "port");
	mtu = 128u << pa.active_mtu;
	fill_pattern(buf, 8192, 3);
	post_recv(b, 65536, 40 + 4096, 1);
	CHECK(post_ud(a, ah, b->qp_num, 0x11111111, 0, 200, 10,
		      IBV_WR_SEND_WITH_IMM) == 0, "post UD");
	expect(cq, 10, IBV_WC_SUCCESS, NULL);
	expect(rcq, 1, IBV_WC_SUCCESS, &wc);
	CHECK(wc.byte_len == 240, "byte_len %u = 40 + payload", wc.byte_len);
	CHECK(wc.wc_flags & IBV_WC_GRH, "no GRH flag");
	CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xfeed,
	      "imm");
	CHECK(wc.src_qp == a->qp_num, "src_qp %u", wc.src_qp);
	CHECK((rb[20] >> 4) == 4, "GRH area holds no IPv4 header");
	CHECK(!memcmp(rb + 40, buf, 200), "payload after the 40-byte GRH");
	/* A reply through an AH built from the completion. */
	back = ibv_create_ah_from_wc(pd, &wc, (struct ibv_grh *)rb, 1);
	CHECK(back != NULL, "create_ah_from_wc");
	post_recv(a, 131072, 4096, 2);
	CHECK(post_ud(b, back, a->qp_num, 0x11111111, 0, 16, 11,
		      IBV_WR_SEND) == 0, "reply");
	expect(rcq, 11, IBV_WC_SUCCESS, NULL);
	expect(cq, 2, IBV_WC_SUCCESS, NULL);
	/* A wrong Q_Key is dropped silently; high bit = use the QP's. */
	post_recv(b, 65536, 40 + 4096, 3);
	CHECK(post_ud(a, ah, b->qp_num, 0x22222222, 0, 16, 12,
		      IBV_WR_SEND) == 0, "bad qkey");
	expect(cq, 12, IBV_WC_SUCCESS, NULL);
	CHECK(!poll_one(rcq, &wc, 0.05), "wrong Q_Key delivered");
	CHECK(post_ud(a, ah, b->qp_num, 0x80000000, 0, 16, 13,
		      IBV_WR_SEND) == 0, "QP qkey");
	expect(cq, 13, IBV_WC_SUCCESS, NULL);
	expect(rcq, 3, IBV_WC_SUCCESS, NULL);
	/* Longer than the path MTU: local length error. */
	CHECK(post_ud(a, ah, b->qp_num, 0x11111111, 0, mtu + 1, 14,
		      IBV_WR_SEND) == 0, "oversize post");
	expect(cq, 14, IBV_WC_LOC_LEN_ERR, NULL);
	/* RDMA operations do not exist on UD (table 1). */
	CHECK(post_ud(a, ah, b->qp_num, 1, 0, 8, 15, IBV_WR_RDMA_WRITE) ==
	      EINVAL, "UD RDMA WRITE accepted");
	CHECK(post_ud(a, NULL, b->qp_num, 1, 0, 8, 16, IBV_WR_SEND) == EINVAL,
	      "UD without AH accepted");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_ah(ah) == 0 && ibv_destroy_ah(back) == 0, "ah");
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(rcq) == 0, "cq");
}

/* UC: SEND and WRITE work unacknowledged; READ is refused at post time;
 * a SEND with no receive WQE is lost, the sender still completes.
 */
static void
uc_semantics(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_UC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_UC, rcq, rcq, NULL);
	struct ibv_wc wc;

	connect_pair(a, b);
	fill_pattern(buf, 8192, 4);
	memset(buf + 512 * 1024, 0, 8192);
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 3000, 1, 0) == 0, "write");
	expect(cq, 1, IBV_WC_SUCCESS, NULL);
	{
		double end = check_now() + 5;

		while (memcmp(buf + 512 * 1024, buf, 3000) &&
		       check_now() < end)
			;
	}
	CHECK(!memcmp(buf + 512 * 1024, buf, 3000), "UC WRITE data");
	CHECK(!poll_one(rcq, &wc, 0.02), "WRITE completed at the receiver");
	CHECK(post_send(a, IBV_WR_SEND, 0, 100, 2, 0) == 0, "send, no recv");
	expect(cq, 2, IBV_WC_SUCCESS, NULL);
	CHECK(!poll_one(rcq, &wc, 0.05), "lost UC SEND completed");
	post_recv(b, 65536, 4096, 3);
	CHECK(post_send(a, IBV_WR_SEND_WITH_IMM, 0, 2500, 4, 0) == 0, "send");
	expect(cq, 4, IBV_WC_SUCCESS, NULL);
	expect(rcq, 3, IBV_WC_SUCCESS, &wc);
	CHECK(wc.byte_len == 2500 && !memcmp(buf + 65536, buf, 2500),
	      "UC SEND data");
	CHECK(post_send(a, IBV_WR_RDMA_READ, 0, 8, 5, 0) == EINVAL,
	      "UC READ accepted");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(rcq) == 0, "cq");
}

/* SQD: new WRs wait, SQ_DRAINED is raised, SQD -> RTS resumes them. */
static void
sqd_drains_and_resumes(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp_attr x = { .qp_state = IBV_QPS_SQD };
	struct ibv_wc wc;

	connect_pair(a, b);
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE) == 0, "RTS->SQD");
	wait_async(IBV_EVENT_SQ_DRAINED, a, 5000);
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 8, 1, 0) == 0, "post in SQD");
	CHECK(!poll_one(cq, &wc, 0.05), "WR ran in SQD");
	x.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE) == 0, "SQD->RTS");
	expect(cq, 1, IBV_WC_SUCCESS, NULL);
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0, "cq");
}

/* Seed 003 5.2: Reset removes that QP's CQEs, and only those. */
static void
reset_purges_only_its_cqes(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *c = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *d = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp_attr x;
	struct ibv_wc wc;
	int i, n = 0;

	connect_pair(a, b);
	connect_pair(c, d);
	for (i = 0; i < 4; i++) {
		CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 8, 100 + i, 0) == 0, "a");
		CHECK(post_send(c, IBV_WR_RDMA_WRITE, 0, 8, 200 + i, 0) == 0, "c");
	}
	usleep(50000);	/* all eight completions are in the CQ */
	memset(&x, 0, sizeof(x));
	x.qp_state = IBV_QPS_ERR;
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE) == 0, "a to Error");
	x.qp_state = IBV_QPS_RESET;
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE) == 0, "a to Reset");
	while (poll_one(cq, &wc, 0.05)) {
		CHECK(wc.qp_num == c->qp_num, "a CQE of the reset QP survived");
		CHECK(wc.wr_id == 200u + n, "order");
		n++;
	}
	CHECK(n == 4, "the other QP's CQEs: %d of 4", n);
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0 &&
	      ibv_destroy_qp(c) == 0 && ibv_destroy_qp(d) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0, "cq");
}

/* ibv_resize_cq: entries survive a resize; not below what is queued. */
static void
resize_cq_keeps_entries(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_wc wc;
	int i;

	connect_pair(a, b);
	for (i = 0; i < 6; i++)
		CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 8, i, 0) == 0, "post");
	usleep(50000);
	CHECK(ibv_resize_cq(cq, 2) == EINVAL, "shrunk below 6 queued");
	CHECK(ibv_resize_cq(cq, 100) == 0 && cq->cqe >= 100, "grow");
	for (i = 0; i < 6; i++) {
		CHECK(poll_one(cq, &wc, 5), "entry %d lost", i);
		CHECK(wc.wr_id == (uint64_t)i && wc.status == IBV_WC_SUCCESS,
		      "entry %d", i);
	}
	CHECK(ibv_resize_cq(cq, 16) == 0 && cq->cqe >= 16, "shrink when empty");
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 8, 99, 0) == 0, "post");
	CHECK(poll_one(cq, &wc, 5) && wc.wr_id == 99, "after the shrink");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0, "cq");
}

/* UD multicast: every attached QP gets a copy, a detached one does not. */
static void
ud_multicast(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *s = make_qp(IBV_QPT_UD, cq, cq, NULL);
	struct ibv_qp *m1 = make_qp(IBV_QPT_UD, cq, cq, NULL);
	struct ibv_qp *m2 = make_qp(IBV_QPT_UD, cq, cq, NULL);
	struct ibv_qp *rcq = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	union ibv_gid mgid = { .raw = { [10] = 0xff, [11] = 0xff,
					[12] = 239, [13] = 1, [14] = 2, [15] = 3 } };
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int got[2] = { 0, 0 };

	connect_qp(s, 0);
	connect_qp(m1, 0);
	connect_qp(m2, 0);
	CHECK(ibv_attach_mcast(rcq, &mgid, 0) == EINVAL, "RC QP attached");
	{
		union ibv_gid uni;

		CHECK(ibv_query_gid(ctx, 1, 0, &uni) == 0, "gid");
		CHECK(ibv_attach_mcast(m1, &uni, 0) == EINVAL,
		      "unicast GID attached");
	}
	CHECK(ibv_attach_mcast(m1, &mgid, 0) == 0, "attach m1");
	CHECK(ibv_attach_mcast(m2, &mgid, 0) == 0, "attach m2");
	aa.grh.dgid = mgid;
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah != NULL, "multicast AH");
	post_recv(m1, 65536, 4096, 1);
	post_recv(m2, 69632, 4096, 2);
	CHECK(post_ud(s, ah, 0xffffff, 0x11111111, 0, 32, 9, IBV_WR_SEND) == 0,
	      "send to group");
	while (poll_one(cq, &wc, 0.2)) {
		CHECK(wc.status == IBV_WC_SUCCESS, "status");
		if (wc.wr_id == 1 || wc.wr_id == 2)
			got[wc.wr_id - 1]++;
	}
	CHECK(got[0] == 1 && got[1] == 1, "copies %d %d", got[0], got[1]);
	CHECK(ibv_detach_mcast(m2, &mgid, 0) == 0, "detach");
	CHECK(ibv_detach_mcast(m2, &mgid, 0) == EINVAL, "detached twice");
	post_recv(m1, 65536, 4096, 3);
	post_recv(m2, 69632, 4096, 4);
	CHECK(post_ud(s, ah, 0xffffff, 0x11111111, 0, 32, 10, IBV_WR_SEND) == 0,
	      "send");
	got[0] = got[1] = 0;
	while (poll_one(cq, &wc, 0.2))
		if (wc.wr_id == 3 || wc.wr_id == 4)
			got[wc.wr_id - 3]++;
	CHECK(got[0] == 1 && got[1] == 0, "after detach %d %d", got[0], got[1]);
	CHECK(ibv_destroy_qp(s) == 0 && ibv_destroy_qp(m1) == 0 &&
	      ibv_destroy_qp(m2) == 0 && ibv_destroy_qp(rcq) == 0, "destroy");
	CHECK(ibv_destroy_ah(ah) == 0 && ibv_destroy_cq(cq) == 0, "ah, cq");
}

/* ibv_post_send(3): ENOMEM past max_send_wr, EINVAL for inline data longer
 * than max_inline_data; bad_wr is the first WR not posted.
 */
static void
post_limits(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr ia;
	struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE }, *bad;
	struct ibv_qp_attr sqd = { .qp_state = IBV_QPS_SQD };
	uint32_t i, cap;
	int ret = 0;

	connect_pair(a, b);
	CHECK(ibv_query_qp(a, &attr, IBV_QP_CAP, &ia) == 0, "query");
	cap = attr.cap.max_send_wr;
	CHECK(attr.cap.max_inline_data >= 64, "max_inline_data %u",
	      attr.cap.max_inline_data);
	/* Hold the SQ in SQD so that nothing drains while it fills up. */
	CHECK(ibv_modify_qp(a, &sqd, IBV_QP_STATE) == 0, "SQD");
	wait_async(IBV_EVENT_SQ_DRAINED, a, 5000);
	wr.wr.rdma.remote_addr = (uintptr_t)buf + 4096;
	wr.wr.rdma.rkey = mr->rkey;
	for (i = 0; i <= cap && ret == 0; i++)
		ret = ibv_post_send(a, &wr, &bad);
	CHECK(ret == ENOMEM && i == cap + 1 && bad == &wr,
	      "full SQ: ret %d after %u of %u", ret, i, cap);
	sqd.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(a, &sqd, IBV_QP_STATE) == 0, "back to RTS");
	for (i = 0; i < cap; i++)
		expect(cq, 0, IBV_WC_SUCCESS, NULL);
	sge.length = attr.cap.max_inline_data + 1;
	wr.send_flags = IBV_SEND_INLINE;
	CHECK(ibv_post_send(a, &wr, &bad) == EINVAL, "oversize inline");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0, "cq");
}

/*
 * Memory protection: an MR of another PD is a local protection error
 * locally and a remote access error remotely; a READ may only land in a
 * region with local write access (ibv_post_send(3) table 3).
 */
static void
protection_domains_and_local_access(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *other = ibv_reg_mr(pd2, buf + 256 * 1024, 4096,
					  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE);
	struct ibv_mr *ro = ibv_reg_mr(pd, buf + 300 * 1024, 4096, 0);
	struct ibv_qp *a, *b;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	CHECK(pd2 != NULL && other != NULL && ro != NULL, "setup");
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	/* Local: the lkey of another PD's MR. */
	sge = (struct ibv_sge){ (uintptr_t)buf + 256 * 1024, 8, other->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)buf;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK(ibv_post_send(a, &wr, &bad) == 0, "post");
	expect(cq, 1, IBV_WC_LOC_PROT_ERR, NULL);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);

	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	/* Remote: the rkey of another PD's MR. */
	sge = (struct ibv_sge){ (uintptr_t)buf, 8, mr->lkey };
	wr.wr_id = 2;
	wr.wr.rdma.remote_addr = (uintptr_t)buf + 256 * 1024;
	wr.wr.rdma.rkey = other->rkey;
	CHECK(ibv_post_send(a, &wr, &bad) == 0, "post");
	expect(cq, 2, IBV_WC_REM_ACCESS_ERR, NULL);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);

	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	/* A READ into a region without IBV_ACCESS_LOCAL_WRITE. */
	sge = (struct ibv_sge){ (uintptr_t)buf + 300 * 1024, 8, ro->lkey };
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)buf;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK(ibv_post_send(a, &wr, &bad) == 0, "post");
	expect(cq, 3, IBV_WC_LOC_PROT_ERR, NULL);
	/* A SEND from it is fine: sending needs no local access right. */
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_dealloc_pd(pd2) == EBUSY, "PD with an MR freed");
	CHECK(ibv_dereg_mr(other) == 0 && ibv_dereg_mr(ro) == 0, "dereg");
	CHECK(ibv_dealloc_pd(pd2) == 0 && ibv_destroy_cq(cq) == 0, "teardown");
	/* Registration rules: remote write needs local write. */
	errno = 0;
	CHECK(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE) == NULL &&
	      errno == EINVAL, "REMOTE_WRITE without LOCAL_WRITE");
}

/* C10-96: posting sends in Init and RTR is an immediate error too. */
static void
post_send_in_init_and_rtr(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp_attr x = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "init");
	CHECK(post_send(a, IBV_WR_SEND, 0, 8, 1, 0) == EINVAL, "Init");
	qp_connect(a, a->qp_num, &rc, IBV_MTU_1024, 5, 5);
	/* Connected to itself: a WRITE needs no receive. */
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 8, 1, 0) == 0, "RTS");
	CHECK(poll_one(cq, &(struct ibv_wc){ 0 }, 5), "completion");
	CHECK(ibv_destroy_qp(a) == 0, "destroy");
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "init");
	memset(&x, 0, sizeof(x));
	x.qp_state = IBV_QPS_RTR;
	x.path_mtu = IBV_MTU_1024;
	x.dest_qp_num = a->qp_num;
	ah_self(a->context, &x.ah_attr);
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
	      "rtr");
	CHECK(post_send(a, IBV_WR_SEND, 0, 8, 2, 0) == EINVAL, "RTR");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

/*
 * UD send errors move only the send queue to SQE (IBA 10.3.1.6); SQE ->
 * RTS (with CUR_STATE) resumes sending. No COMM_EST on UD.
 */
static void
ud_sqe_recovers_and_no_comm_est(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_UD, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_UD, cq, cq, NULL);
	struct ibv_ah *ah = self_ah();
	struct ibv_qp_attr x = { 0 };
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc;

	connect_qp(a, 0);
	connect_qp(b, 0);
	CHECK(post_ud(a, ah, b->qp_num, 0x11111111, 0, 8192, 1,
		      IBV_WR_SEND) == 0, "oversize");
	expect(cq, 1, IBV_WC_LOC_LEN_ERR, NULL);
	CHECK(ibv_query_qp(a, &x, IBV_QP_STATE, &ia) == 0 &&
	      x.qp_state == IBV_QPS_SQE, "state %d, want SQE", x.qp_state);
	CHECK(post_ud(a, ah, b->qp_num, 0x11111111, 0, 8, 2, IBV_WR_SEND) == 0,
	      "post in SQE");
	expect(cq, 2, IBV_WC_WR_FLUSH_ERR, NULL);
	x.qp_state = IBV_QPS_RTS;
	x.cur_qp_state = IBV_QPS_SQE;
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_CUR_STATE) == 0,
	      "SQE -> RTS");
	post_recv(b, 65536, 4096, 3);
	CHECK(post_ud(a, ah, b->qp_num, 0x11111111, 0, 8, 4, IBV_WR_SEND) == 0,
	      "post after recovery");
	CHECK(poll_one(cq, &wc, 5) && poll_one(cq, &wc, 5), "completions");
	CHECK(!fd_ready(ctx->async_fd, 20), "an async event (COMM_EST?) on UD");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_ah(ah) == 0 && ibv_destroy_cq(cq) == 0, "cq");
}

/* The completion channel's fd works with epoll too. */
static void
channel_with_epoll(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct epoll_event ev = { .events = EPOLLIN }, got;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int ep = epoll_create1(0);

	CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ev) == 0,
	      "epoll");
	connect_pair(a, b);
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "arm");
	CHECK(epoll_wait(ep, &got, 1, 20) == 0, "event before any completion");
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 8, 1, 0) == 0, "post");
	CHECK(epoll_wait(ep, &got, 1, 5000) == 1, "no epoll event");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq, "event");
	ibv_ack_cq_events(cq, 1);
	expect(cq, 1, IBV_WC_SUCCESS, NULL);
	close(ep);
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_comp_channel(ch) == 0,
	      "cq, channel");
}

/* A receive WQE with a bad lkey: LOC_PROT_ERR at the responder, NAK remote
 * operational error, IBV_WC_REM_OP_ERR at the requester (IBA 9.7.5.2.4).
 */
static void
remote_operational_error(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, rcq, rcq, NULL);
	struct ibv_sge sge = { (uintptr_t)buf + 65536, 64, mr->lkey + 1 };
	struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 },
		*rbad;

	connect_pair(a, b);
	CHECK(ibv_post_recv(b, &rwr, &rbad) == 0, "post_recv");
	CHECK(post_send(a, IBV_WR_SEND, 0, 32, 10, 0) == 0, "send");
	expect(rcq, 9, IBV_WC_LOC_PROT_ERR, NULL);
	expect(cq, 10, IBV_WC_REM_OP_ERR, NULL);
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(rcq) == 0, "cq");
}

/*
 * IBV_SEND_FENCE: the fenced WR waits for the READ before it to complete,
 * so on the wire its request follows the READ's last response (checked in
 * the DPIB_CAPTURE file this program writes).
 */
static void
fence_waits_for_read(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_sge s1 = { (uintptr_t)buf + 131072, 20000, mr->lkey };
	struct ibv_sge s2 = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_send_wr w2 = { .wr_id = 2, .sg_list = &s2, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_FENCE,
		.wr.rdma = { (uintptr_t)buf + 262144, mr->rkey } };
	struct ibv_send_wr w1 = { .wr_id = 1, .sg_list = &s1, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .next = &w2,
		.wr.rdma = { (uintptr_t)buf + 393216, mr->rkey } }, *bad;
	const char *path = getenv("DPIB_CAPTURE");
	struct pcap_file pf;
	const uint8_t *data;
	uint32_t caplen;
	long last_resp = -1, write_req = -1, n = 0;

	CHECK(path != NULL, "run with DPIB_CAPTURE");
	connect_pair(a, b);
	CHECK(ibv_post_send(a, &w1, &bad) == 0, "post READ + fenced WRITE");
	expect(cq, 1, IBV_WC_SUCCESS, NULL);
	expect(cq, 2, IBV_WC_SUCCESS, NULL);
	usleep(20000);
	CHECK(pcap_open(&pf, path) == 0, "open capture");
	while (pcap_next(&pf, &data, &caplen) == 1) {
		uint32_t qpn, op;

		n++;
		if (caplen < 54 || data[12] != 0x08 || data[13] != 0x00)
			continue;
		op = data[42];
		qpn = (data[47] << 16) | (data[48] << 8) | data[49];
		if (qpn == a->qp_num && op == 0x0f)	/* READ RESPONSE LAST */
			last_resp = n;
		if (qpn == b->qp_num && op == 0x0a)	/* RDMA WRITE ONLY */
			write_req = n;
	}
	pcap_close(&pf);
	CHECK(last_resp > 0 && write_req > 0, "frames not found");
	CHECK(write_req > last_resp, "fenced WRITE (frame %ld) before the "
	      "READ's last response (frame %ld)", write_req, last_resp);
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0 &&
	      ibv_destroy_cq(cq) == 0, "destroy");
}

/* One RDMA WRITE from @a through @rkey to @raddr; its completion status. */
static enum ibv_wc_status
write_status(struct ibv_qp *a, struct ibv_cq *cq, uint32_t rkey,
	     uint64_t raddr, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { raddr, rkey } }, *bad;
	struct ibv_wc wc;

	CHECK(ibv_post_send(a, &wr, &bad) == 0, "post");
	CHECK(poll_one(cq, &wc, 5) && wc.wr_id == wr_id, "completion");
	return wc.status;
}

/*
 * ibv_rereg_mr(3): access, translation and PD change in place, keys kept,
 * enforced from the next access; bad input leaves the MR as it was.
 */
static void
rereg_mr_rules(void)
{
	uint8_t *area = aligned_alloc(4096, 3 * 8192);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *m;
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a, *b;
	uint32_t lkey, rkey;

	CHECK(area != NULL && pd2 != NULL, "setup");
	memset(area, 0, 3 * 8192);
	m = ibv_reg_mr(pd, area, 8192, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_WRITE);
	CHECK(m != NULL, "reg");
	lkey = m->lkey;
	rkey = m->rkey;
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	fill_pattern(buf, 64, 21);
	CHECK(write_status(a, cq, rkey, (uintptr_t)area, 1) == IBV_WC_SUCCESS,
	      "WRITE before");
	/* Bad input: the MR stays as it was. */
	errno = 0;
	CHECK(ibv_rereg_mr(m, 0, NULL, NULL, 0, 0) == IBV_REREG_MR_ERR_INPUT &&
	      errno == EINVAL, "no flags");
	errno = 0;
	CHECK(ibv_rereg_mr(m, 1 << 7, NULL, NULL, 0, 0) ==
	      IBV_REREG_MR_ERR_INPUT && errno == EINVAL, "unknown flag");
	errno = 0;
	CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_REMOTE_WRITE) == IBV_REREG_MR_ERR_INPUT &&
	      errno == EINVAL, "REMOTE_WRITE without LOCAL_WRITE");
	CHECK(write_status(a, cq, rkey, (uintptr_t)area + 64, 2) ==
	      IBV_WC_SUCCESS, "WRITE after refused rereg");
	/* Access: remote write withdrawn, then given back. Keys unchanged. */
	CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE) == 0, "rereg access");
	CHECK(m->lkey == lkey && m->rkey == rkey, "keys changed");
	CHECK(write_status(a, cq, rkey, (uintptr_t)area, 3) ==
	      IBV_WC_REM_ACCESS_ERR, "WRITE after access dropped");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	/* Translation (with access back): the same rkey now means the new
	 * range, the old one is outside the region.
	 */
	CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_TRANSLATION |
			   IBV_REREG_MR_CHANGE_ACCESS, NULL, area + 16384, 8192,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) == 0,
	      "rereg translation");
	CHECK(m->addr == area + 16384 && m->length == 8192 && m->rkey == rkey,
	      "ibv_mr fields");
	CHECK(write_status(a, cq, rkey, (uintptr_t)area + 16384, 4) ==
	      IBV_WC_SUCCESS && !memcmp(area + 16384, buf, 64),
	      "WRITE into the new range");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	connect_pair(a, b);
	CHECK(write_status(a, cq, rkey, (uintptr_t)area, 5) ==
	      IBV_WC_REM_ACCESS_ERR, "WRITE into the old range");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	/* PD: a receive buffer in an MR of another PD is a protection error
	 * at the responder, a remote operational error at the requester.
	 */
	{
		struct ibv_cq *rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		struct ibv_sge sge = { (uintptr_t)area + 16384, 64, m->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 6, .sg_list = &sge,
					   .num_sge = 1 }, *rbad;

		a = make_qp(IBV_QPT_RC, cq, cq, NULL);
		b = make_qp(IBV_QPT_RC, rcq, rcq, NULL);
		connect_pair(a, b);
		CHECK(ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0) ==
		      0 && m->pd == pd2, "rereg PD");
		CHECK(ibv_post_recv(b, &rwr, &rbad) == 0, "post_recv");
		CHECK(post_send(a, IBV_WR_SEND, 0, 32, 7, 0) == 0, "send");
		expect(rcq, 6, IBV_WC_LOC_PROT_ERR, NULL);
		expect(cq, 7, IBV_WC_REM_OP_ERR, NULL);
		CHECK(ibv_dealloc_pd(pd2) == EBUSY, "PD of the MR freed");
		CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0 &&
		      ibv_destroy_cq(rcq) == 0, "destroy");
	}
	CHECK(ibv_dereg_mr(m) == 0 && ibv_dealloc_pd(pd2) == 0 &&
	      ibv_destroy_cq(cq) == 0, "teardown");
	free(area);
}

static uint64_t
counter(const char *name)
{
	return dev_counter(ctx, name);
}

/*
 * An RC QP in RTS toward 192.0.2.@host (TEST-NET-1, on no link: only ARP
 * replies the test injects make it known), QPN 0x123.
 */
static struct ibv_qp *
qp_to_remote(struct ibv_cq *cq, uint8_t host, uint8_t timeout,
	     uint8_t retry_cnt, uint8_t max_rd_atomic)
{
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp_attr x = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "init");
	memset(&x, 0, sizeof(x));
	x.qp_state = IBV_QPS_RTR;
	x.path_mtu = IBV_MTU_1024;
	x.dest_qp_num = 0x123;
	x.ah_attr.is_global = 1;
	x.ah_attr.port_num = 1;
	x.ah_attr.grh.dgid.raw[10] = x.ah_attr.grh.dgid.raw[11] = 0xff;
	x.ah_attr.grh.dgid.raw[12] = 192;
	x.ah_attr.grh.dgid.raw[13] = 0;
	x.ah_attr.grh.dgid.raw[14] = 2;
	x.ah_attr.grh.dgid.raw[15] = host;
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
	      "RTR to a remote GID");
	memset(&x, 0, sizeof(x));
	x.qp_state = IBV_QPS_RTS;
	x.timeout = timeout;
	x.retry_cnt = retry_cnt;
	x.rnr_retry = 0;
	x.max_rd_atomic = max_rd_atomic;
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0, "RTS");
	return a;
}

/*
 * A peer nobody answers ARP for: nothing is sent to a guessed MAC, and the
 * WR fails with RETRY_EXC_ERR once timeout x (retry_cnt + 1) has passed.
 */
static void
unresolved_peer_times_out(void)
{
	/* Counted from before RTR, which starts resolving the peer. */
	uint64_t rx0 = counter("rx_packets"), tx0 = counter("tx_packets");
	uint64_t arp0 = counter("arp_rx");
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = qp_to_remote(cq, 99, 12, 2, 0);	/* 16.8 ms */
	struct ibv_wc wc;
	double t0, bound;

	t0 = check_now();
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 64, 1, 0) == 0, "post");
	CHECK(poll_one(cq, &wc, 5), "no completion");
	bound = 4.096e-6 * (1 << 12) * 3;
	CHECK(wc.wr_id == 1 && wc.status == IBV_WC_RETRY_EXC_ERR, "status %s",
	      ibv_wc_status_str(wc.status));
	CHECK(check_now() - t0 >= bound * 0.9 && check_now() - t0 < bound + 1,
	      "failed after %.3f s, bound %.3f s", check_now() - t0, bound);
	/* Only ARP requests went out (and came back on the loopback port). */
	CHECK(counter("arp_request_sent") > 0, "no ARP request");
	CHECK(counter("tx_packets") - tx0 == counter("rx_packets") - rx0,
	      "loopback lost frames");
	CHECK(counter("rx_packets") - rx0 == counter("arp_rx") - arp0 &&
	      counter("rx_packets") > rx0, "a non-ARP frame was sent");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

/*
 * An ARP reply (op 2) or gratuitous request (op 1) for 192.0.2.@host,
 * returning once the engine has taken it in: dpib_inject only queues, so
 * a marker frame follows (not RoCE, counted as such) and the ARP frame is
 * in when the marker is counted. Polling @cq for nothing drives an inline
 * engine.
 */
static void
inject_arp(struct ibv_cq *cq, uint8_t host, uint8_t op, uint8_t mac_low)
{
	uint8_t f[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff,	/* broadcast */
		0x02, 0, 0, 0, host, mac_low, 0x08, 0x06,
		0, 1, 0x08, 0, 6, 4, 0, op,
		0x02, 0, 0, 0, host, mac_low, 192, 0, 2, host,	/* sender */
		0, 0, 0, 0, 0, 0, 192, 0, 2, host,	/* target: itself */
	};
	uint8_t marker[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0,
			       0, 0, host, mac_low, 0x88, 0xb5 };
	uint64_t seen = counter("rx_drop_not_roce");
	struct ibv_wc wc;
	double end;

	CHECK(dpib_inject(ctx, f, sizeof(f)) == 0 &&
	      dpib_inject(ctx, marker, sizeof(marker)) == 0, "inject ARP");
	end = check_now() + 2;
	while (counter("rx_drop_not_roce") == seen && check_now() < end)
		CHECK(ibv_poll_cq(cq, 0, &wc) == 0, "poll");
	CHECK(counter("rx_drop_not_roce") > seen, "injected ARP not taken in");
}

/*
 * The RoCE frames this run sent to 192.0.2.@host (read off its capture),
 * and the destination MAC of the last one in @mac.
 */
static int
frames_to(uint8_t host, uint8_t mac[6])
{
	const char *path = getenv("DPIB_CAPTURE");
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len;
	int n = 0;

	CHECK(path != NULL && pcap_open(&pf, path) == 0, "open capture");
	while (pcap_next(&pf, &d, &len) == 1)
		if (len >= 54 && d[12] == 0x08 && d[13] == 0x00 &&
		    d[23] == 17 && d[30] == 192 && d[31] == 0 && d[32] == 2 &&
		    d[33] == host) {
			memcpy(mac, d, 6);
			n++;
		}
	pcap_close(&pf);
	return n;
}

/*
 * READs posted while the peer's MAC is being resolved go out once it is
 * known: waiting for ARP holds no READ credit (each engine pass that found
 * no MAC used to keep one, and after max_rd_atomic passes the READs never
 * left, as perftest's ib_read_bw showed between two processes).
 */
static void
reads_wait_for_neighbour(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = qp_to_remote(cq, 98, 20, 7, 2);	/* 4.3 s */
	uint8_t mac[6];
	struct ibv_wc wc;
	double end;
	int i;

	for (i = 0; i < 6; i++)
		CHECK(post_send(a, IBV_WR_RDMA_READ, 4096 * i, 64, 10 + i,
				IBV_SEND_SIGNALED) == 0, "post READ %d", i);
	/* Many engine passes without a MAC (polls drive an inline engine). */
	end = check_now() + 0.05;
	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "completion without a peer");
	CHECK(frames_to(98, mac) == 0, "sent before ARP");
	inject_arp(cq, 98, 2, 0x01);
	/* Then max_rd_atomic of them leave (nobody answers: no more). */
	end = check_now() + 2;
	while (frames_to(98, mac) < 2 && check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	end = check_now() + 0.02;
	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	CHECK(frames_to(98, mac) == 2, "%d READ requests left once the MAC "
	      "was known, want 2", frames_to(98, mac));
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

/*
 * A path follows its peer's MAC: a gratuitous ARP announcing another MAC
 * for the peer's address (a failover) moves the QP's next packets there.
 */
static void
path_follows_neighbour_mac(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = qp_to_remote(cq, 97, 20, 7, 2);	/* 4.3 s */
	uint8_t mac[6];
	struct ibv_wc wc;
	double end;

	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 64, 1, IBV_SEND_SIGNALED) ==
	      0, "post");
	end = check_now() + 0.02;
	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "completion without a peer");
	inject_arp(cq, 97, 2, 0x01);
	end = check_now() + 2;
	while (!frames_to(97, mac) && check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	CHECK(frames_to(97, mac) && mac[5] == 0x01, "first MAC not used");
	/* Announced elsewhere: the next packet (a retransmission, or a new
	 * WR) goes to the new MAC.
	 */
	inject_arp(cq, 97, 1, 0x02);
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 64, 64, 2, IBV_SEND_SIGNALED) ==
	      0, "post");
	end = check_now() + 2;
	while (frames_to(97, mac) && mac[5] != 0x02 && check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	CHECK(mac[5] == 0x02, "still sending to %02x after the announcement",
	      mac[5]);
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

static char capture_path[64];

static void
remove_capture(void)
{
	unlink(capture_path);
}

int
main(void)
{
	/* The FENCE test reads the frames off a capture of this run. */
	if (getenv("DPIB_CAPTURE") == NULL) {
		snprintf(capture_path, sizeof(capture_path),
			 "/tmp/dpib-test-verbs-%d.pcap", getpid());
		setenv("DPIB_CAPTURE", capture_path, 1);
		atexit(remove_capture);
	}
	open_all();
	RUN(completion_channel_events);
	RUN(solicited_only_events);
	RUN(destroy_cq_waits_for_ack);
	RUN(async_comm_est);
	RUN(srq_shared_and_limit);
	RUN(ud_semantics);
	RUN(uc_semantics);
	RUN(sqd_drains_and_resumes);
	RUN(reset_purges_only_its_cqes);
	RUN(resize_cq_keeps_entries);
	RUN(unresolved_peer_times_out);
	RUN(reads_wait_for_neighbour);
	RUN(path_follows_neighbour_mac);
	RUN(ud_multicast);
	RUN(post_limits);
	RUN(protection_domains_and_local_access);
	RUN(post_send_in_init_and_rtr);
	RUN(ud_sqe_recovers_and_no_comm_est);
	RUN(channel_with_epoll);
	RUN(remote_operational_error);
	RUN(fence_waits_for_read);
	RUN(rereg_mr_rules);
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0, "teardown");
	CHECK(ibv_close_device(ctx) == 0, "close");
	ibv_free_device_list(list);
	free(buf);
	CHECK_DONE();
}
