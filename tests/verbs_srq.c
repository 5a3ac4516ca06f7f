/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * test_verbs: the SRQ and its limit event (seed 002 section 8.1).
 */
#include <rte_malloc.h>

#include "verbs_lb.h"
#include "ib_verbs.h"	/* to_mw: an MW's block begins with its key */

/* Seed 002 8.1: SRQ shared by two QPs, the limit event and its re-arming. */
void
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

/*
 * The DPDK heap zeroes memory as it is freed, and rte_zmalloc counts on
 * that: nothing may write to an object once it is freed. The SRQ's mutex
 * and condition were destroyed after its memory went (glibc marks a
 * destroyed mutex), and the next CQ allocated there came back with a
 * stray completion channel pointer: its ibv_destroy_cq hung. For every
 * object the heap holds (SRQ, QP, CQ, PD, MR, MW, AH): once destroyed, the
 * memory it was is all zero, as the heap left it.
 */
/* Is the memory a destroyed object was (@size bytes at @p) still zero? */
static int
still_zero(const void *obj, size_t size)
{
	const volatile uint8_t *p = obj;
	size_t i;

	for (i = 0; i < size && p[i] == 0; i++)
		;
	if (i < size)
		fprintf(stderr, "# byte %zu of %zu is 0x%02x\n", i, size, p[i]);
	return i == size;
}

static int
freed_clean(void *obj, int (*destroy)(void *), void *arg)
{
	size_t size = 0;

	CHECK(rte_malloc_validate(obj, &size) == 0 && size != 0,
	      "object not on the DPDK heap");
	CHECK(destroy(arg) == 0, "destroy");
	/* Still heap memory, mapped: read as the allocator left it. */
	return still_zero(obj, size);
}

static int destroy_srq(void *o) { return ibv_destroy_srq(o); }
static int dealloc_pd(void *o) { return ibv_dealloc_pd(o); }
static int dereg_mr(void *o) { return ibv_dereg_mr(o); }
static int dealloc_mw(void *o) { return ibv_dealloc_mw(o); }
static int destroy_ah(void *o) { return ibv_destroy_ah(o); }
static int destroy_cq(void *o) { return ibv_destroy_cq(o); }
static int destroy_qp(void *o) { return ibv_destroy_qp(o); }

void
destroy_leaves_heap_clean(void)
{
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &si);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *cq2;
	struct ibv_qp *qp;

	CHECK(srq != NULL && cq != NULL, "create");
	CHECK(freed_clean(srq, destroy_srq, srq), "SRQ: freed memory written");
	qp = make_qp(IBV_QPT_RC, cq, cq, NULL);
	CHECK(freed_clean(qp, destroy_qp, qp), "QP: freed memory written");
	cq2 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq2 != NULL, "create_cq");
	CHECK(freed_clean(cq2, destroy_cq, cq2), "CQ: freed memory written");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
	{
		struct ibv_pd *p2 = ibv_alloc_pd(ctx);
		struct ibv_mr *m2 = ibv_reg_mr(pd, buf, 4096,
					       IBV_ACCESS_LOCAL_WRITE);
		struct ibv_mw *w2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		struct ibv_ah *a2 = self_ah();

		CHECK(p2 && m2 && w2 && a2, "create PD, MR, MW, AH");
		CHECK(freed_clean(p2, dealloc_pd, p2), "PD: freed memory written");
		CHECK(freed_clean(m2, dereg_mr, m2), "MR: freed memory written");
		CHECK(freed_clean(to_mw(w2), dealloc_mw, w2),
		      "MW: freed memory written");
		CHECK(freed_clean(a2, destroy_ah, a2), "AH: freed memory written");
	}
}

/*
 * The same for QPs destroyed with traffic about them: B while A's WRITEs
 * are on their way to it (what arrives later finds no QP), then A with
 * WRITEs outstanding and its transport timer armed. 50 ms after each
 * destroy - long enough for A to resend to the vanished B, and for any
 * timer, list or held ACK that still pointed at the QP to have fired -
 * the memory each QP was is still all zero.
 */
void
destroy_mid_stream_leaves_heap_clean(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp *b = make_qp(IBV_QPT_RC, rcq, rcq, NULL);
	size_t asize = 0, bsize = 0;
	void *ap = a, *bp = b;
	int i;

	connect_pair(a, b);
	CHECK(rte_malloc_validate(a, &asize) == 0 &&
	      rte_malloc_validate(b, &bsize) == 0, "QPs not on the DPDK heap");
	for (i = 0; i < 24; i++)
		CHECK(post_send(a, IBV_WR_RDMA_WRITE, (i % 16) * 4096, 4096, i,
				0) == 0, "post %d", i);
	CHECK(ibv_destroy_qp(b) == 0, "destroy B");
	for (i = 24; i < 28; i++)
		CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 4096, i, 0) == 0,
		      "post %d", i);
	usleep(50000);
	(void)ibv_poll_cq(cq, 0, NULL);	/* inline mode: passes run */
	CHECK(still_zero(bp, bsize), "B's memory written after destroy");
	CHECK(ibv_destroy_qp(a) == 0, "destroy A");
	usleep(50000);
	(void)ibv_poll_cq(cq, 0, NULL);
	CHECK(still_zero(ap, asize), "A's memory written after destroy");
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(rcq) == 0, "cq");
}
