/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Sharded engines (issue 17), on the loopback device with two engines
 * (DPIB_ENGINES=2; meson runs it with adaptive and inline engines):
 *
 * With placement = spread (QPs round the engines, whatever their CQs):
 *   - a connection between QPs of two engines: WRITE, READ, SEND with
 *     immediate and atomics, every byte checked, the frames handed over;
 *   - one CQ that QPs of both engines complete on, and one SRQ that both
 *     take from: every completion once, each QP's in order, every receive
 *     WQE used once;
 *   - a multicast group with members on both engines: one copy each;
 *   - load that moves: traffic on one engine's QPs, then the other's, then
 *     both from two threads, while QPs are created and destroyed on the
 *     busy engine; each engine's figures move only with its own load;
 *   - frames an engine sent on the loopback port, waiting on its own RX
 *     queue, are taken while the program waits on another engine's CQ.
 * With placement = cq (the default): QPs follow their CQ, so that a pair
 * on one CQ runs on one engine and nothing is handed over; a QP whose two
 * CQs belong to different engines makes its receive CQ shared.
 * With either: dpib_engine_lend runs a function on engine 0's lcore, in
 * another thread, while that engine serves nothing (a WRITE posted
 * meanwhile stays unsent until it returns); EAGAIN before the engine
 * runs, EDEADLK from the lent lcore itself, ENOTSUP in inline mode.
 * And control calls beside traffic that comes and goes: a thread
 * registers and deregisters MRs and cycles a spare QP through RESET and
 * INIT while this one sends rounds of WRITEs on pairs of both engines,
 * with pauses between the rounds long enough for the loops to go to
 * sleep. A call finds a loop asleep (it runs at once in the caller, under
 * the loop's pass lock) or awake (the loop runs it between two passes):
 * in adaptive mode both happen (counters engine_ctl_direct and
 * engine_ctl_queued), in inline mode every call is direct; every byte
 * lands where it was written.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "dpib.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint8_t *buf;
static struct ibv_mr *mr;

#define BUF_LEN		(8u << 20)
#define SRC(i)		(buf + (i) * 65536u)		/* 64 slots */
#define DST(i)		(buf + (4u << 20) + (i) * 65536u)

#include "verbs_util.h"

static const struct pair_opts opts = {
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	.max_rd_atomic = 16, .min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 14, .retry_cnt = 7,
};

static struct ibv_qp *
rc_qp(struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 128, .max_recv_wr = srq ? 0 : 256,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	CHECK(qp != NULL, "create_qp errno %d", errno);
	return qp;
}

static void
connect2(struct ibv_qp *a, struct ibv_qp *b)
{
	qp_connect(a, b->qp_num, &opts, IBV_MTU_4096, 0xfffff0, 0xffff00);
	qp_connect(b, a->qp_num, &opts, IBV_MTU_4096, 0xffff00, 0xfffff0);
}

static int
post(struct ibv_qp *qp, enum ibv_wr_opcode op, void *src, void *dst,
     uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)src, len, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl((uint32_t)wr_id),
		.wr.rdma = { (uintptr_t)dst, mr->rkey },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static void
recv_wqe(struct ibv_qp *qp, struct ibv_srq *srq, void *to, uint32_t len,
	 uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)to, len, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (srq != NULL)
		CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0, "post_srq_recv");
	else
		CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "post_recv");
}

static void
expect_ok(struct ibv_cq *cq, struct ibv_wc *wc)
{
	CHECK(poll_one(cq, wc, 10), "no completion");
	CHECK(wc->status == IBV_WC_SUCCESS, "wr %lu: %s",
	      (unsigned long)wc->wr_id, ibv_wc_status_str(wc->status));
}

static int
engine_of(struct ibv_qp *qp)
{
	int e = dpib_qp_engine(qp);

	CHECK(e == 0 || e == 1, "engine %d", e);
	return e;
}

/* What the lent function saw, for the main thread to check. */
struct lent {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	pthread_t caller;
	int ran, other_thread, nested, posted, completed, landed;
};

static void
nop(void *arg)
{
	(void)arg;
}

/* On engine 0's lcore: a WRITE from its QP must not move for 30 ms. */
static void
lent_fn(void *arg)
{
	struct lent *l = arg;
	struct ibv_wc wc;
	double end = check_now() + 0.03;

	l->ran = 1;
	l->other_thread = !pthread_equal(pthread_self(), l->caller);
	l->nested = dpib_engine_lend(ctx, nop, NULL);
	l->posted = post(l->qp, IBV_WR_RDMA_WRITE, SRC(2), DST(2), 4096, 7);
	while (check_now() < end)
		l->completed += ibv_poll_cq(l->cq, 1, &wc) == 1;
	l->landed = memcmp(SRC(2), DST(2), 4096) == 0;
}

static void
engine_lend(void)
{
	const char *mode = getenv("DPIB_ENGINE_MODE");
	struct lent l = { .caller = pthread_self() };
	struct ibv_qp *a, *b;
	struct ibv_wc wc;
	int ran = 0;

	if (mode != NULL && strcmp(mode, "inline") == 0) {
		CHECK(dpib_engine_lend(ctx, nop, NULL) == ENOTSUP,
		      "inline mode has no lcore to lend");
		return;
	}
	/* The engines start with the first QP. */
	CHECK(dpib_engine_lend(ctx, lent_fn, &ran) == EAGAIN && !ran,
	      "lent before the engine runs");
	l.cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHECK(l.cq != NULL, "cq");
	a = rc_qp(l.cq, l.cq, NULL);
	b = rc_qp(l.cq, l.cq, NULL);
	connect2(a, b);
	l.qp = engine_of(a) == 0 ? a : b;
	CHECK(engine_of(l.qp) == 0, "a QP of engine 0");
	memset(SRC(2), 0x3c, 4096);
	memset(DST(2), 0, 4096);
	CHECK(dpib_engine_lend(ctx, lent_fn, &l) == 0, "lend");
	CHECK(l.ran && l.other_thread, "ran on the engine's thread");
	CHECK(l.nested == EDEADLK, "lend from the lent lcore: %d", l.nested);
	CHECK(l.posted == 0, "post");
	CHECK(!l.completed && !l.landed, "the engine served a WRITE while "
	      "its lcore was lent");
	expect_ok(l.cq, &wc);
	CHECK(wc.wr_id == 7 && memcmp(SRC(2), DST(2), 4096) == 0,
	      "the WRITE after the lend");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(l.cq) == 0, "destroy cq");
}

/* Four QPs in a row go round the two engines. */
static void
placement_spread(void)
{
	struct dpib_engine_stats st[4];
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *q[4];
	int i;

	CHECK(dpib_engine_stats(ctx, st, 4) == 2, "two engines serve dpib0");
	CHECK(st[0].queue == 0 && st[1].queue > 0, "queues %u %u",
	      st[0].queue, st[1].queue);
	for (i = 0; i < 4; i++)
		q[i] = rc_qp(cq, cq, NULL);
	for (i = 1; i < 4; i++)
		CHECK(engine_of(q[i]) != engine_of(q[i - 1]),
		      "QPs %d and %d on one engine", i - 1, i);
	for (i = 0; i < 4; i++)
		CHECK(ibv_destroy_qp(q[i]) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy cq");
}

/* Every kind of operation between QPs of the two engines. */
static void
cross_engine_rc(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 512, NULL, NULL, 0);
	struct ibv_qp *a = rc_qp(cq, cq, NULL), *b = rc_qp(cq, cq, NULL);
	uint64_t handed = dev_counter(ctx, "rx_handed_to_engine");
	uint64_t *counter = (uint64_t *)DST(63), expect_sum = 0;
	struct ibv_wc wc;
	int i;

	CHECK(engine_of(a) != engine_of(b), "a pair across the engines");
	connect2(a, b);
	for (i = 0; i < 32; i++) {
		uint32_t len = 1 + (uint32_t)i * 2011;

		fill_pattern(SRC(i), len, (uint32_t)i + 1);
		CHECK(post(a, IBV_WR_RDMA_WRITE, SRC(i), DST(i), len, i) == 0,
		      "WRITE %d", i);
	}
	for (i = 0; i < 32; i++) {
		expect_ok(cq, &wc);
		CHECK(wc.wr_id == (uint64_t)i, "WRITE %lu out of order",
		      (unsigned long)wc.wr_id);
	}
	for (i = 0; i < 32; i++)
		CHECK(memcmp(SRC(i), DST(i), 1 + (uint32_t)i * 2011) == 0,
		      "WRITE %d data", i);
	/* b READs back what a wrote. */
	memset(SRC(40), 0, 65536);
	CHECK(post(b, IBV_WR_RDMA_READ, SRC(40), DST(31), 62342, 100) == 0,
	      "READ");
	expect_ok(cq, &wc);
	CHECK(memcmp(SRC(40), DST(31), 62342) == 0, "READ data");
	/* SEND with immediate, b -> a. */
	for (i = 0; i < 16; i++)
		recv_wqe(a, NULL, DST(48 + i % 8), 65536, 200 + i);
	for (i = 0; i < 16; i++) {
		fill_pattern(SRC(i), 3000, 77 + (uint32_t)i);
		CHECK(post(b, IBV_WR_SEND_WITH_IMM, SRC(i), NULL, 3000,
			   300 + i) == 0, "SEND %d", i);
	}
	for (i = 0; i < 32; i++) {
		expect_ok(cq, &wc);
		if (wc.opcode == IBV_WC_RECV) {
			CHECK(wc.wc_flags & IBV_WC_WITH_IMM, "immediate");
			CHECK(ntohl(wc.imm_data) == wc.wr_id + 100, "imm %u for "
			      "receive %lu", ntohl(wc.imm_data),
			      (unsigned long)wc.wr_id);
			CHECK(wc.byte_len == 3000 && wc.qp_num == a->qp_num,
			      "receive length %u qp %u", wc.byte_len, wc.qp_num);
		}
	}
	/* FETCH_ADD from both sides on one counter. */
	*counter = 0;
	for (i = 0; i < 64; i++) {
		struct ibv_sge sge = { (uintptr_t)SRC(60) + i * 8, 8, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 400 + i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.atomic = { (uintptr_t)counter, (uint64_t)i + 1,
				       0, mr->rkey },
		}, *bad;

		expect_sum += (uint64_t)i + 1;
		CHECK(ibv_post_send(i & 1 ? a : b, &wr, &bad) == 0, "atomic");
		if (i % 8 == 7) {
			int k;

			for (k = 0; k < 8; k++)
				expect_ok(cq, &wc);
		}
	}
	CHECK(*counter == expect_sum, "counter %lu, want %lu",
	      (unsigned long)*counter, (unsigned long)expect_sum);
	CHECK(dev_counter(ctx, "rx_handed_to_engine") > handed + 100,
	      "the frames were not handed between the engines");
	CHECK(dev_counter(ctx, "rx_drop_handoff_full") == 0, "hand-off drops");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy cq");
}

#define SQPS	8	/* 4 pairs, spread: every pair spans the engines */
#define SMSGS	400

/*
 * One CQ for every QP of both engines, for sends and receives, and one SRQ
 * they all receive into: WRITE with immediate from every QP to its peer.
 */
static void
shared_cq_srq(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = SQPS * SMSGS,
						  .max_sge = 1 } };
	struct ibv_cq *cq = ibv_create_cq(ctx, 2 * SQPS * SMSGS, NULL, NULL, 0);
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_qp *q[SQPS];
	uint32_t sent[SQPS] = { 0 }, done[SQPS] = { 0 }, got[SQPS] = { 0 };
	uint8_t *used = calloc(SQPS * SMSGS, 1);
	int i, e[2] = { 0, 0 }, left = 2 * SQPS * SMSGS;
	struct ibv_wc wc[32];
	double deadline = check_now() + 60;

	CHECK(cq != NULL && srq != NULL && used != NULL, "cq, srq");
	for (i = 0; i < SQPS; i++) {
		q[i] = rc_qp(cq, cq, srq);
		e[engine_of(q[i])]++;
	}
	CHECK(e[0] == SQPS / 2 && e[1] == SQPS / 2, "QPs per engine %d %d",
	      e[0], e[1]);
	for (i = 0; i < SQPS; i += 2)
		connect2(q[i], q[i + 1]);
	for (i = 0; i < SQPS * SMSGS; i++)
		recv_wqe(NULL, srq, DST(0), 64, 10000 + i);
	while (left > 0) {
		int n, k;

		CHECK(check_now() < deadline, "%d completions missing", left);
		for (i = 0; i < SQPS; i++)
			while (sent[i] < SMSGS && sent[i] - done[i] < 16) {
				CHECK(post(q[i], IBV_WR_RDMA_WRITE_WITH_IMM,
					   SRC(i), DST(8 + i), 64,
					   (uint64_t)i << 32 | sent[i]) == 0,
				      "post");
				sent[i]++;
			}
		n = ibv_poll_cq(cq, 32, wc);
		CHECK(n >= 0, "poll");
		for (k = 0; k < n; k++) {
			CHECK(wc[k].status == IBV_WC_SUCCESS, "%s",
			      ibv_wc_status_str(wc[k].status));
			left--;
			if (wc[k].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
				uint64_t w = wc[k].wr_id - 10000;

				CHECK(w < SQPS * SMSGS && !used[w],
				      "receive WQE %lu used twice",
				      (unsigned long)w);
				used[w] = 1;
				for (i = 0; i < SQPS; i++)
					if (q[i]->qp_num == wc[k].qp_num)
						got[i]++;
				continue;
			}
			i = (int)(wc[k].wr_id >> 32);
			CHECK(i < SQPS && (uint32_t)wc[k].wr_id == done[i],
			      "QP %d: completion %u, want %u", i,
			      (uint32_t)wc[k].wr_id, done[i]);
			done[i]++;
		}
	}
	for (i = 0; i < SQPS; i++)
		CHECK(done[i] == SMSGS && got[i] == SMSGS,
		      "QP %d: %u sends, %u receives", i, done[i], got[i]);
	CHECK(ibv_poll_cq(cq, 32, wc) == 0, "completions beyond the WRs");
	for (i = 0; i < SQPS; i++)
		CHECK(ibv_destroy_qp(q[i]) == 0, "destroy");
	CHECK(ibv_destroy_srq(srq) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
	free(used);
}

/* A UD group with members on both engines: one copy to each. */
static void
multicast_engines(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	union ibv_gid mgid = { .raw = { [10] = 0xff, [11] = 0xff,
					[12] = 239, [13] = 1, [14] = 2, [15] = 9 } };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_qp *q[5];
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int i, got[5] = { 0 }, e[2] = { 0, 0 };

	for (i = 0; i < 5; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1, .qkey = 0x11111111 };

		q[i] = ibv_create_qp(pd, &ia);
		CHECK(q[i] != NULL, "UD QP");
		CHECK(ibv_modify_qp(q[i], &a, IBV_QP_STATE |
				    IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_QKEY) == 0, "INIT");
		a.qp_state = IBV_QPS_RTR;
		CHECK(ibv_modify_qp(q[i], &a, IBV_QP_STATE) == 0, "RTR");
		a.qp_state = IBV_QPS_RTS;
		CHECK(ibv_modify_qp(q[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0,
		      "RTS");
		if (i > 0) {
			e[engine_of(q[i])]++;
			CHECK(ibv_attach_mcast(q[i], &mgid, 0) == 0, "attach");
			recv_wqe(q[i], NULL, DST(i), 4096, (uint64_t)i);
		}
	}
	CHECK(e[0] == 2 && e[1] == 2, "members per engine %d %d", e[0], e[1]);
	CHECK(ibv_query_gid(ctx, 1, 0, &aa.grh.dgid) == 0, "gid");
	aa.grh.dgid = mgid;
	aa.grh.hop_limit = 1;
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah != NULL, "multicast AH");
	{
		struct ibv_sge sge = { (uintptr_t)SRC(0), 100, mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 99, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.wr.ud = { .ah = ah, .remote_qpn = 0xffffff,
				   .remote_qkey = 0x11111111 },
		}, *bad;

		fill_pattern(SRC(0), 100, 5);
		CHECK(ibv_post_send(q[0], &wr, &bad) == 0, "send to group");
	}
	while (poll_one(cq, &wc, 0.5)) {
		CHECK(wc.status == IBV_WC_SUCCESS, "%s",
		      ibv_wc_status_str(wc.status));
		if (wc.wr_id >= 1 && wc.wr_id <= 4) {
			got[wc.wr_id]++;
			CHECK(memcmp(DST(wc.wr_id) + 40, SRC(0), 100) == 0,
			      "member %lu data", (unsigned long)wc.wr_id);
		}
	}
	for (i = 1; i < 5; i++)
		CHECK(got[i] == 1, "member %d (engine %d): %d copies", i,
		      engine_of(q[i]), got[i]);
	for (i = 0; i < 5; i++)
		CHECK(ibv_destroy_qp(q[i]) == 0, "destroy");
	CHECK(ibv_destroy_ah(ah) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

/* A stream of WRITEs on one pair: @n messages, up to 32 outstanding. */
struct stream {
	struct ibv_qp *a, *b;
	struct ibv_cq *cq;
	uint32_t n;
	int slot;
};

static void *
stream_run(void *arg)
{
	struct stream *s = arg;
	uint32_t sent = 0, done = 0;
	double deadline = check_now() + 60;
	struct ibv_wc wc[16];

	while (done < s->n) {
		int k, n;

		CHECK(check_now() < deadline, "stream stalled at %u", done);
		while (sent < s->n && sent - done < 32) {
			CHECK(post(sent & 1 ? s->b : s->a, IBV_WR_RDMA_WRITE,
				   SRC(s->slot), DST(s->slot), 256, sent) == 0,
			      "post");
			sent++;
		}
		n = ibv_poll_cq(s->cq, 16, wc);
		CHECK(n >= 0, "poll");
		for (k = 0; k < n; k++) {
			CHECK(wc[k].status == IBV_WC_SUCCESS, "%s",
			      ibv_wc_status_str(wc[k].status));
			done++;
		}
	}
	return NULL;
}

static void
engine_figures(uint64_t rx[2])
{
	struct dpib_engine_stats st[2];

	CHECK(dpib_engine_stats(ctx, st, 2) == 2, "engines");
	rx[0] = st[0].rx_packets;
	rx[1] = st[1].rx_packets;
}

/*
 * Load that moves between the engines: pairs whose QPs are both on one
 * engine (QPs 0, 2 on one, 1, 3 on the other), driven one engine at a
 * time, then both at once from two threads, while QPs come and go.
 */
static void
moving_load(void)
{
	struct ibv_cq *cq[2];
	struct ibv_qp *q[4];
	struct stream s[2];
	uint64_t before[2], after[2];
	pthread_t t[2];
	int i, r;

	for (i = 0; i < 2; i++)
		cq[i] = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	for (i = 0; i < 4; i++)
		q[i] = rc_qp(cq[i & 1], cq[i & 1], NULL);
	CHECK(engine_of(q[0]) == engine_of(q[2]) &&
	      engine_of(q[1]) == engine_of(q[3]) &&
	      engine_of(q[0]) != engine_of(q[1]), "pairs per engine");
	for (i = 0; i < 2; i++) {
		connect2(q[i], q[i + 2]);
		s[i] = (struct stream){ q[i], q[i + 2], cq[i], 3000, 50 + i };
	}
	for (r = 0; r < 4; r++) {
		int on = engine_of(q[r & 1]);

		engine_figures(before);
		stream_run(&s[r & 1]);
		engine_figures(after);
		CHECK(after[on] - before[on] >= 3000,
		      "engine %d took in %lu frames for its 3000 WRITEs", on,
		      (unsigned long)(after[on] - before[on]));
		CHECK(after[!on] - before[!on] < 100,
		      "idle engine %d took in %lu frames", !on,
		      (unsigned long)(after[!on] - before[!on]));
	}
	/* Both at once, and the control path parks both meanwhile. */
	for (i = 0; i < 2; i++) {
		s[i].n = 20000;
		CHECK(pthread_create(&t[i], NULL, stream_run, &s[i]) == 0,
		      "thread");
	}
	for (r = 0; r < 20; r++) {
		struct ibv_qp *x = rc_qp(cq[0], cq[0], NULL);
		struct ibv_qp *y = rc_qp(cq[1], cq[1], NULL);

		connect2(x, y);
		CHECK(ibv_destroy_qp(x) == 0 && ibv_destroy_qp(y) == 0,
		      "destroy under load");
	}
	for (i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0, "join");
	for (i = 0; i < 4; i++)
		CHECK(ibv_destroy_qp(q[i]) == 0, "destroy");
	for (i = 0; i < 2; i++)
		CHECK(ibv_destroy_cq(cq[i]) == 0, "destroy cq");
}

/* loopback_unread's receive of SEND @i, on @cq within 5 s. */
static void
unread_receive(struct ibv_cq *cq, int i)
{
	struct ibv_wc wc;

	CHECK(poll_one(cq, &wc, 5), "SEND %d: no receive", i);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1000u + (uint64_t)i,
	      "receive %d: %s", i, ibv_wc_status_str(wc.status));
}

/*
 * What one engine sends on the loopback port comes back on its own RX
 * queue, which wakes no sleeping loop: the program's calls (inline) and
 * the loop's flush of held ACKs must see that it is taken. A pair across
 * the engines, each end on a CQ of its own, no transport timeout (an ACK
 * left unread would never be sent again): SENDs whose completion the
 * program waits for on the requester's CQ alone, or after the receive on
 * the responder's, with pauses that let the loops fall asleep. Each
 * completes within 5 s (the loop's sleep then lasted forever on
 * about one in a hundred, found by test_random).
 */
static void
loopback_unread(void)
{
	struct pair_opts o = opts;
	struct ibv_cq *cq[2];
	struct ibv_qp *a, *b;
	struct ibv_wc wc;
	int i;

	o.timeout = 0;
	for (i = 0; i < 2; i++)
		cq[i] = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	a = rc_qp(cq[0], cq[0], NULL);
	b = rc_qp(cq[1], cq[1], NULL);
	CHECK(engine_of(a) != engine_of(b), "a pair across the engines");
	qp_connect(a, b->qp_num, &o, IBV_MTU_1024, 0x100, 0x200);
	qp_connect(b, a->qp_num, &o, IBV_MTU_1024, 0x200, 0x100);
	for (i = 0; i < 1000; i++) {
		recv_wqe(b, NULL, DST(1), 4096, 1000 + i);
		CHECK(post(a, IBV_WR_SEND, SRC(1), NULL, 1 + i * 13 % 3000,
			   (uint64_t)i) == 0, "SEND %d", i);
		if (i % 2 == 1)
			unread_receive(cq[1], i);
		CHECK(poll_one(cq[0], &wc, 5), "SEND %d: no completion "
		      "within 5 s (its ACK left on a loopback queue)", i);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i,
		      "SEND %d: %s", i, ibv_wc_status_str(wc.status));
		if (i % 2 == 0)
			unread_receive(cq[1], i);
		usleep((useconds_t)(i % 5) * 300);
	}
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy");
	for (i = 0; i < 2; i++)
		CHECK(ibv_destroy_cq(cq[i]) == 0, "destroy cq");
}

/*
 * placement = cq: a QP goes to its send CQ's engine, a new CQ's first QP
 * to the engine with fewer QPs; a pair on one CQ then never hands frames
 * over. A QP whose receive CQ is another engine's shares that CQ.
 */
static void
placement_cq(void)
{
	struct ibv_cq *cq[2];
	struct ibv_qp *q[6];
	struct stream s[2];
	uint64_t handed;
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 2; i++)
		cq[i] = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	for (i = 0; i < 4; i++)
		q[i] = rc_qp(cq[i / 2], cq[i / 2], NULL);
	CHECK(engine_of(q[0]) == engine_of(q[1]) &&
	      engine_of(q[2]) == engine_of(q[3]) &&
	      engine_of(q[0]) != engine_of(q[2]), "QPs follow their CQ");
	handed = dev_counter(ctx, "rx_handed_to_engine");
	for (i = 0; i < 2; i++) {
		connect2(q[2 * i], q[2 * i + 1]);
		s[i] = (struct stream){ q[2 * i], q[2 * i + 1], cq[i], 5000,
					50 + i };
		stream_run(&s[i]);
	}
	CHECK(dev_counter(ctx, "rx_handed_to_engine") == handed,
	      "frames handed over between pairs of one engine");
	/* Sends complete on cq[0], receives on cq[1]: another engine's. */
	q[4] = rc_qp(cq[0], cq[1], NULL);
	q[5] = rc_qp(cq[0], cq[0], NULL);
	CHECK(engine_of(q[4]) == engine_of(q[0]), "send CQ's engine");
	connect2(q[4], q[5]);
	for (i = 0; i < 200; i++)
		recv_wqe(q[4], NULL, DST(20), 64, 1000 + i);
	for (i = 0; i < 200; i++) {
		CHECK(post(q[5], IBV_WR_SEND, SRC(0), NULL, 64, 2000 + i) == 0,
		      "SEND");
		expect_ok(cq[0], &wc);
		CHECK(wc.wr_id == 2000u + i, "send %lu", (unsigned long)wc.wr_id);
		expect_ok(cq[1], &wc);
		CHECK(wc.wr_id == 1000u + i && wc.qp_num == q[4]->qp_num,
		      "receive %lu", (unsigned long)wc.wr_id);
	}
	for (i = 0; i < 6; i++)
		CHECK(ibv_destroy_qp(q[i]) == 0, "destroy");
	for (i = 0; i < 2; i++)
		CHECK(ibv_destroy_cq(cq[i]) == 0, "destroy cq");
}

/* control_beside_sleep's control thread. */
struct churner {
	struct ibv_qp *spare;
	uint8_t *mem;
	atomic_int stop;
	uint32_t rounds;
};

static void *
churn_control(void *arg)
{
	struct churner *c = arg;
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };

	while (!atomic_load(&c->stop)) {
		struct ibv_mr *m = ibv_reg_mr(pd, c->mem + (c->rounds % 16) * 4096,
					      4096, IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_WRITE);

		CHECK(m != NULL, "reg_mr errno %d", errno);
		CHECK(ibv_modify_qp(c->spare, &init, IBV_QP_STATE |
				    IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_ACCESS_FLAGS) == 0, "modify INIT");
		CHECK(ibv_modify_qp(c->spare, &reset, IBV_QP_STATE) == 0,
		      "modify RESET");
		CHECK(ibv_dereg_mr(m) == 0, "dereg_mr");
		c->rounds++;
	}
	return NULL;
}

static void
control_beside_sleep(void)
{
	const char *mode = getenv("DPIB_ENGINE_MODE");
	int inline_mode = mode != NULL && strcmp(mode, "inline") == 0;
	uint64_t direct0 = dev_counter(ctx, "engine_ctl_direct");
	uint64_t queued0 = dev_counter(ctx, "engine_ctl_queued");
	uint64_t direct, queued;
	struct churner c = { .mem = malloc(16 * 4096) };
	struct ibv_cq *cq[2];
	struct ibv_qp *q[4];
	struct ibv_wc wc;
	uint32_t seed = 17, r, k, off[4], len[4];
	pthread_t t;
	int i, engines[2] = { 0, 0 };

	CHECK(c.mem != NULL, "malloc");
	for (i = 0; i < 2; i++)
		cq[i] = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	for (i = 0; i < 4; i++) {
		q[i] = rc_qp(cq[i & 1], cq[i & 1], NULL);
		engines[engine_of(q[i])] = 1;
	}
	CHECK(engines[0] && engines[1], "the pairs are on one engine");
	connect2(q[0], q[2]);
	connect2(q[1], q[3]);
	c.spare = rc_qp(cq[0], cq[0], NULL);
	CHECK(pthread_create(&t, NULL, churn_control, &c) == 0, "thread");
	for (r = 0; r < 400; r++) {
		for (k = 0; k < 4; k++) {
			seed = seed * 1103515245u + 12345u;
			len[k] = 1 + (seed >> 8) % 8192;
			off[k] = (seed >> 20) % 32;
			fill_pattern(SRC(off[k]), len[k], r * 4 + k);
			memset(DST(off[k] + 32 * (k & 1)), 0, len[k]);
		}
		for (k = 0; k < 4; k++) {
			uint32_t d = off[k] + 32 * (k & 1);

			CHECK(post(q[k & 1], IBV_WR_RDMA_WRITE, SRC(off[k]),
				   DST(d), len[k], k) == 0, "post");
			expect_ok(cq[k & 1], &wc);
			CHECK(wc.wr_id == k, "wr %lu", (unsigned long)wc.wr_id);
			CHECK(memcmp(SRC(off[k]), DST(d), len[k]) == 0,
			      "round %u, WRITE %u: bytes differ", r, k);
		}
		usleep((seed >> 4) % 400);	/* the loops' spin is 50 us */
	}
	atomic_store(&c.stop, 1);
	CHECK(pthread_join(t, NULL) == 0, "join");
	direct = dev_counter(ctx, "engine_ctl_direct") - direct0;
	queued = dev_counter(ctx, "engine_ctl_queued") - queued0;
	printf("  %u control rounds: %lu direct, %lu queued\n", c.rounds,
	       (unsigned long)direct, (unsigned long)queued);
	CHECK(c.rounds > 0, "no control call ran");
	CHECK(direct > 0, "no control call ran beside a sleeping loop");
	if (inline_mode)
		CHECK(queued == 0, "%lu queued in inline mode",
		      (unsigned long)queued);
	else
		CHECK(queued > 0, "no control call met an awake loop");
	CHECK(ibv_destroy_qp(c.spare) == 0, "destroy spare");
	for (i = 0; i < 4; i++)
		CHECK(ibv_destroy_qp(q[i]) == 0, "destroy");
	for (i = 0; i < 2; i++)
		CHECK(ibv_destroy_cq(cq[i]) == 0, "destroy cq");
	free(c.mem);
}

int
main(void)
{
	const char *place = getenv("DPIB_PLACEMENT");
	struct ibv_device **list;

	ctx = open_first(&list, &pd, &buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC, &mr);
	RUN(engine_lend);
	if (place != NULL && strcmp(place, "spread") == 0) {
		RUN(placement_spread);
		RUN(cross_engine_rc);
		RUN(shared_cq_srq);
		RUN(multicast_engines);
		RUN(moving_load);
		RUN(loopback_unread);
		RUN(control_beside_sleep);
	} else {
		RUN(placement_cq);
	}
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0, "cleanup");
	CHECK(ibv_close_device(ctx) == 0, "close");
	ibv_free_device_list(list);
	free(buf);
	CHECK_DONE();
}
