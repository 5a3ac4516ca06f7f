/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * test_verbs: completion channels and CQ events (seed 002 section 8.2), asynchronous events
 * (section 9), Reset purging CQEs (seed 003 section 5.2), resize_cq.
 */
#include <signal.h>
#include <sys/time.h>

#include "verbs_lb.h"

/* Seed 002 8.2: arm, get the event through a poll()-able fd, re-arm, ack. */
void
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

/*
 * A blocking ibv_get_cq_event is a read() of the channel's descriptor with
 * a kernel HCA: a signal whose handler lacks SA_RESTART ends it with EINTR
 * (qperf stops its event loop at the test's end that way), one with
 * SA_RESTART does not. In inline mode the waiting thread runs the engine
 * itself between its waits, and must answer the same. A thread posts the
 * WRITE that brings the event: at 300 ms after a SA_RESTART alarm of 50
 * ms, at 1.5 s (the wait's watchdog) after the other.
 */
static volatile sig_atomic_t alarms;

static void
on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

struct late_post {
	struct ibv_qp *qp;
	int ms;
};

static void *
post_later(void *arg)
{
	struct late_post *l = arg;

	usleep((useconds_t)l->ms * 1000);
	CHECK(post_send(l->qp, IBV_WR_RDMA_WRITE, 0, 64, 77, 0) == 0, "post");
	return NULL;
}

void
cq_event_wait_interrupted_as_read(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, ch, 0), *ev_cq;
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct itimerval it = { .it_value = { .tv_usec = 50000 } };
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct late_post l = { .qp = a };
	struct ibv_wc wc;
	sig_atomic_t before;
	double t0, took;
	void *ev_ctx;
	pthread_t t;
	int restart, ret, err;

	connect_pair(a, b);
	for (restart = 0; restart < 2; restart++) {
		sa.sa_flags = restart ? SA_RESTART : 0;
		sigemptyset(&sa.sa_mask);
		CHECK(sigaction(SIGALRM, &sa, &old) == 0, "sigaction");
		CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify");
		l.ms = restart ? 300 : 1500;
		CHECK(pthread_create(&t, NULL, post_later, &l) == 0, "thread");
		before = alarms;
		CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
		t0 = check_now();
		errno = 0;
		ret = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
		err = errno;
		took = check_now() - t0;
		CHECK(alarms == before + 1, "the alarm did not come");
		if (!restart) {
			CHECK(ret == -1 && err == EINTR && took < 1.0,
			      "no SA_RESTART: returned %d (errno %d) after "
			      "%.3f s, want EINTR at the alarm", ret, err, took);
			CHECK(pthread_join(t, NULL) == 0, "join");
			CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0,
			      "the event after EINTR");
		} else {
			CHECK(ret == 0 && took > 0.2,
			      "SA_RESTART: returned %d (errno %d) after %.3f "
			      "s, want the event at 0.3 s", ret, err, took);
			CHECK(pthread_join(t, NULL) == 0, "join");
		}
		CHECK(ev_cq == cq, "event's CQ");
		expect(cq, 77, IBV_WC_SUCCESS, &wc);
		ibv_ack_cq_events(cq, 1);
		CHECK(sigaction(SIGALRM, &old, NULL) == 0, "sigaction back");
	}
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy qps");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy cq");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy channel");
}

/* solicited_only: only a SEND with IBV_SEND_SOLICITED (or an error) fires. */
void
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
void
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
void
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

/* Seed 003 5.2: Reset removes that QP's CQEs, and only those. */
void
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
void
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

/* The completion channel's fd works with epoll too. */
void
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
