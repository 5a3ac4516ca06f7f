/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * test_churn: objects destroyed with work in flight leave nothing behind.
 * The loopback device; hundreds of cycles of each kind, each destroying its
 * objects at a different point of the exchange (after i % k completions):
 *   ud    - two UD QPs, receives posted, 16 SENDs in flight, an AH;
 *   uc    - two UC QPs, 24 three-packet WRITEs (every third with
 *           immediate) in flight, receives for the immediates;
 *   srq   - an SRQ with 48 receives, two RC pairs whose targets take from
 *           it, two-packet SENDs in flight; the SRQ destroyed last;
 *   rc    - an RC pair with READs, atomics and WRITEs in flight;
 *   chan  - a completion channel and an armed CQ whose event arrives (and
 *           is acknowledged) before the destroy, an MR of fresh memory.
 * After every round: the process's malloc bytes in use and DPDK heap bytes
 * grow by less than SLACK over the baseline (taken after a warm-up round of
 * each kind), and once the frames still on the loopback have been dropped
 * (within 2 s) the mbufs in use and the open descriptors are back at the
 * baseline exactly. The CM test (test_rdmacm inflight) does the same for
 * RC connections made through librdmacm. Then: a QP destroyed with an async
 * event unread takes the event with it.
 */
#include <dirent.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>

#include <rte_malloc.h>

#include "verbs_lb.h"
#include "usage.h"

struct ibv_device **list;
struct ibv_context *ctx;
struct ibv_pd *pd;
uint8_t *buf;
struct ibv_mr *mr;
char capture_path[64];

#define ROUNDS	3
#define CYCLES	100		/* of each kind, per round */
#define SLACK	(16 * 1024)	/* bytes a heap may grow: caches, not leaks */
#define QKEY	0x11111111u

struct usage {
	size_t heap;	/* malloc's bytes in use */
	size_t dpdk;	/* DPDK heap bytes allocated */
	int mbufs;
	int fds;
};

static struct usage
usage_now(void)
{
	struct usage u = {
		.heap = mallinfo2().uordblks,
		.dpdk = dpdk_heap(),
		.mbufs = dpib_mbufs_in_use(ctx),
		.fds = fd_count(),
	};

	return u;
}

static struct ibv_cq *
cq_new(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 128, NULL, NULL, 0);

	CHECK(cq != NULL, "create_cq errno %d", errno);
	return cq;
}

/* @n completions from @cq within 1 s, all successful; how many came. */
static int
reap(struct ibv_cq *cq, int n)
{
	double end = check_now() + 1;
	struct ibv_wc wc[16];
	int got = 0, k, j;

	while (got < n && check_now() < end) {
		k = ibv_poll_cq(cq, RTE_MIN(n - got, 16), wc);
		CHECK(k >= 0, "poll_cq %d", k);
		for (j = 0; j < k; j++)
			CHECK(wc[j].status == IBV_WC_SUCCESS, "wr %" PRIu64 ": %s",
			      wc[j].wr_id, ibv_wc_status_str(wc[j].status));
		got += k;
	}
	CHECK(got == n, "%d of %d completions", got, n);
	return got;
}

static void
destroy_qps(struct ibv_qp *a, struct ibv_qp *b, int i)
{
	/* Either end first: the survivor's frames then meet no QP. */
	CHECK(ibv_destroy_qp(i & 1 ? b : a) == 0, "destroy_qp");
	CHECK(ibv_destroy_qp(i & 1 ? a : b) == 0, "destroy_qp");
}

static void
ud_cycle(int i)
{
	struct ibv_cq *scq = cq_new(), *rcq = cq_new();
	struct ibv_qp *a = make_qp(IBV_QPT_UD, scq, scq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_UD, rcq, rcq, NULL);
	struct ibv_ah_attr aa = { 0 };
	struct ibv_ah *ah;
	int k;

	connect_pair(a, b);
	ah_self(ctx, &aa);
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah != NULL, "create_ah errno %d", errno);
	for (k = 0; k < 16; k++)
		post_recv(b, 4096 * k, 296, k);
	for (k = 0; k < 16; k++) {
		struct ibv_sge sge = { (uintptr_t)buf + 65536 + 256 * k, 256,
				       mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = k, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = b->qp_num,
				   .remote_qkey = QKEY },
		}, *bad;

		CHECK(ibv_post_send(a, &wr, &bad) == 0, "post UD send %d", k);
	}
	reap(rcq, i % 17);
	destroy_qps(a, b, i);
	CHECK(ibv_destroy_ah(ah) == 0, "destroy_ah");
	CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0,
	      "destroy_cq");
}

static void
uc_cycle(int i)
{
	struct ibv_cq *scq = cq_new(), *rcq = cq_new();
	struct ibv_qp *a = make_qp(IBV_QPT_UC, scq, scq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_UC, rcq, rcq, NULL);
	int k;

	connect_pair(a, b);	/* path MTU 1024: 3000 bytes are 3 packets */
	for (k = 0; k < 8; k++)
		post_recv(b, 0, 0, k);
	for (k = 0; k < 24; k++)
		CHECK(post_send(a, k % 3 == 2 ? IBV_WR_RDMA_WRITE_WITH_IMM :
				IBV_WR_RDMA_WRITE, 4096 * (k % 16), 3000, k,
				IBV_SEND_SIGNALED) == 0, "post UC WRITE %d", k);
	reap(scq, i % 9);
	destroy_qps(a, b, i);
	CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0,
	      "destroy_cq");
}

static void
srq_cycle(int i)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct ibv_cq *scq = cq_new(), *rcq = cq_new();
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_qp *a[2], *b[2];
	int k, j;

	CHECK(srq != NULL, "create_srq errno %d", errno);
	for (k = 0; k < 48; k++) {
		struct ibv_sge sge = { (uintptr_t)buf + 8192 * (k % 32), 8192,
				       mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0, "post_srq_recv");
	}
	for (j = 0; j < 2; j++) {
		a[j] = make_qp(IBV_QPT_RC, scq, scq, NULL);
		b[j] = make_qp(IBV_QPT_RC, rcq, rcq, srq);
		connect_pair(a[j], b[j]);
	}
	for (k = 0; k < 16; k++)	/* path MTU 4096: two packets each */
		CHECK(post_send(a[k & 1], IBV_WR_SEND, 8192 * (k % 8), 5000, k,
				IBV_SEND_SIGNALED) == 0, "post SEND %d", k);
	reap(rcq, i % 13);
	for (j = 0; j < 2; j++)
		destroy_qps(a[j], b[j], i + j);
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");
	CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0,
	      "destroy_cq");
}

static void
rc_cycle(int i)
{
	struct ibv_cq *scq = cq_new(), *rcq = cq_new();
	struct ibv_qp *a = make_qp(IBV_QPT_RC, scq, scq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, rcq, rcq, NULL);
	struct pair_opts o = rc;
	int k;

	o.qp_access |= IBV_ACCESS_REMOTE_ATOMIC;
	qp_connect(a, b->qp_num, &o, IBV_MTU_4096, 100, 100);
	qp_connect(b, a->qp_num, &o, IBV_MTU_4096, 100, 100);
	for (k = 0; k < 24; k++) {
		int ret;

		if (k % 3 == 0) {
			ret = post_send(a, IBV_WR_RDMA_READ, 16384 * (k % 8),
					9000, k, IBV_SEND_SIGNALED);
		} else if (k % 3 == 1) {
			struct ibv_sge sge = { (uintptr_t)buf + 200000 + 8 * k,
					       8, mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = k, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.atomic = {
					.remote_addr = (uintptr_t)buf + 300000,
					.compare_add = 1, .rkey = mr->rkey },
			}, *bad;

			ret = ibv_post_send(a, &wr, &bad);
		} else {
			ret = post_send(a, IBV_WR_RDMA_WRITE, 16384 * (k % 8),
					6000, k, IBV_SEND_SIGNALED);
		}
		CHECK(ret == 0, "post %d: %d", k, ret);
	}
	reap(scq, i % 11);
	destroy_qps(a, b, i);
	CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0,
	      "destroy_cq");
}

static void
chan_cycle(int i)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *scq = cq_new(), *rcq, *ev_cq;
	struct ibv_qp *a, *b;
	size_t len = 65536;
	uint8_t *m = aligned_alloc(4096, len);
	struct ibv_mr *own;
	void *ev_ctx;

	CHECK(ch != NULL && m != NULL, "channel, memory");
	rcq = ibv_create_cq(ctx, 64, NULL, ch, 0);
	CHECK(rcq != NULL, "create_cq on channel errno %d", errno);
	own = ibv_reg_mr(pd, m, len, IBV_ACCESS_LOCAL_WRITE);
	CHECK(own != NULL, "reg_mr errno %d", errno);
	a = make_qp(IBV_QPT_RC, scq, scq, NULL);
	b = make_qp(IBV_QPT_RC, rcq, rcq, NULL);
	connect_pair(a, b);
	CHECK(ibv_req_notify_cq(rcq, 0) == 0, "req_notify");
	{
		struct ibv_sge sge = { (uintptr_t)m, 1000, own->lkey };
		struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		CHECK(ibv_post_recv(b, &wr, &bad) == 0, "post_recv");
	}
	CHECK(post_send(a, IBV_WR_SEND, 0, 1000, 1, IBV_SEND_SIGNALED) == 0,
	      "post SEND");
	CHECK(fd_ready(ch->fd, 5000), "no completion event");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == rcq,
	      "get_cq_event");
	ibv_ack_cq_events(rcq, 1);
	if (i & 1)	/* the rest of the time with its entry still queued */
		reap(rcq, 1);
	destroy_qps(a, b, i);
	CHECK(ibv_dereg_mr(own) == 0, "dereg_mr");
	free(m);
	CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0,
	      "destroy_cq");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy_comp_channel");
}

static const struct {
	const char *name;
	void (*cycle)(int);
} kinds[] = {
	{ "ud", ud_cycle }, { "uc", uc_cycle }, { "srq", srq_cycle },
	{ "rc", rc_cycle }, { "chan", chan_cycle },
};

/* The usage once the loopback's last frames are dropped (2 s at most). */
static struct usage
settled(int mbufs_want)
{
	double end = check_now() + 2;
	struct usage u = usage_now();

	while (u.mbufs > mbufs_want && check_now() < end) {
		usleep(1000);
		u = usage_now();
	}
	return u;
}

static void
churn(void)
{
	struct usage base, u;
	size_t r, k;
	int i;

	for (k = 0; k < DIM(kinds); k++) {	/* warm-up: caches fill */
		check_current = kinds[k].name;
		for (i = 0; i < 10; i++)
			kinds[k].cycle(i);
	}
	base = settled(0);
	printf("# baseline: heap %zu bytes, DPDK heap %zu bytes, %d mbufs, "
	       "%d fds\n", base.heap, base.dpdk, base.mbufs, base.fds);
	for (r = 0; r < ROUNDS; r++) {
		double t0 = check_now();

		for (k = 0; k < DIM(kinds); k++) {
			check_current = kinds[k].name;
			for (i = 0; i < CYCLES; i++)
				kinds[k].cycle(i);
		}
		check_current = "churn";
		u = settled(base.mbufs);
		printf("# round %zu (%zu cycles, %.2f s): heap %+ld bytes, DPDK "
		       "heap %+ld bytes, mbufs %+d, fds %+d\n", r + 1,
		       CYCLES * DIM(kinds), check_now() - t0,
		       (long)u.heap - (long)base.heap,
		       (long)u.dpdk - (long)base.dpdk, u.mbufs - base.mbufs,
		       u.fds - base.fds);
		CHECK(u.heap < base.heap + SLACK, "heap %zu -> %zu bytes",
		      base.heap, u.heap);
		CHECK(u.dpdk < base.dpdk + SLACK, "DPDK heap %zu -> %zu bytes",
		      base.dpdk, u.dpdk);
		CHECK(u.mbufs == base.mbufs, "mbufs in use %d -> %d",
		      base.mbufs, u.mbufs);
		CHECK(u.fds == base.fds, "descriptors %d -> %d", base.fds,
		      u.fds);
	}
}

/* An SRQ QP sent to Error: it raises LAST_WQE_REACHED (C11-5.2.2). */
static struct ibv_qp *
srq_qp_to_error(struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp *qp = make_qp(IBV_QPT_RC, cq, cq, srq);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "to Error");
	return qp;
}

static struct ibv_qp *
next_async_qp(int ms)
{
	struct ibv_async_event ev;
	struct ibv_qp *qp;

	if (!fd_ready(ctx->async_fd, ms))
		return NULL;
	CHECK(ibv_get_async_event(ctx, &ev) == 0, "get_async_event");
	CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED, "event %s",
	      ibv_event_type_str(ev.event_type));
	qp = ev.element.qp;
	ibv_ack_async_event(&ev);
	return qp;
}

/*
 * A QP destroyed with its async event unread: the event goes with it, even
 * when it came after the reader last looked (one unread event of another
 * QP already counted). It used to stay queued and be handed out after the
 * QP was freed.
 */
static void
destroyed_qp_takes_its_events(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_cq *cq = cq_new();
	struct ibv_qp *a, *b, *x;

	CHECK(srq != NULL, "create_srq");
	while (next_async_qp(0) != NULL)
		;
	a = srq_qp_to_error(cq, srq);
	b = srq_qp_to_error(cq, srq);
	CHECK(next_async_qp(5000) == a, "A's event first");
	x = srq_qp_to_error(cq, srq);	/* behind B's, which was counted */
	CHECK(ibv_destroy_qp(x) == 0, "destroy X");
	CHECK(next_async_qp(5000) == b, "B's event next");
	CHECK(next_async_qp(200) == NULL, "an event of the destroyed QP");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_srq(srq) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

int
main(void)
{
	ctx = open_first(&list, &pd, &buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC, &mr);
	RUN(churn);
	RUN(destroyed_qp_takes_its_events);
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0 &&
	      ibv_close_device(ctx) == 0, "close");
	ibv_free_device_list(list);
	free(buf);
	CHECK_DONE();
}
