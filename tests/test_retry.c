/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Retry limits (IBA 9.7.6.1.3, 9.7.5.2.8):
 *  - a peer that stops answering (DPIB_FAULTS=drop=1: every frame lost)
 *    makes the requester complete with IBV_WC_RETRY_EXC_ERR once
 *    timeout x (retry_cnt + 1) has passed, and not much later;
 *  - with no receive posted and rnr_retry 0, IBV_WC_RNR_RETRY_EXC_ERR.
 * Usage: test_retry lost|rnr
 */
#include "verbs_util.h"

static void
run(struct pair_opts *o, int post_recv, enum ibv_wc_status want,
    double lo, double hi)
{
	struct pair p;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;
	double t0, dt;

	pair_open(&p, o);
	pair_connect(&p, o);
	if (post_recv) {
		struct ibv_recv_wr rwr = { 0 }, *rbad;

		sge = (struct ibv_sge){ (uintptr_t)p.buf + 4096, 64, p.mr->lkey };
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		CHECK(ibv_post_recv(p.qp[1], &rwr, &rbad) == 0, "post_recv");
	}
	sge = (struct ibv_sge){ (uintptr_t)p.buf, 64, p.mr->lkey };
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	t0 = check_now();
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
	CHECK(poll_one(p.cq[0], &wc, hi + 5), "no completion");
	dt = check_now() - t0;
	CHECK(wc.wr_id == 7 && wc.status == want, "status %s, want %s",
	      ibv_wc_status_str(wc.status), ibv_wc_status_str(want));
	CHECK(dt >= lo && dt <= hi, "after %.3f s, expected %.3f..%.3f s", dt,
	      lo, hi);
	printf("  %s after %.3f s (bound %.3f..%.3f)\n",
	       ibv_wc_status_str(wc.status), dt, lo, hi);
	pair_close(&p);
}

/* Every frame lost: retry_cnt retransmissions of 4.096 us x 2^timeout. */
static void
lost_peer_retry_exceeded(void)
{
	struct pair_opts o = {
		.buflen = 65536, .mr_access = IBV_ACCESS_LOCAL_WRITE,
		.qp_access = IBV_ACCESS_LOCAL_WRITE, .max_wr = 4, .max_sge = 1,
		.sq_sig_all = 1, .max_rd_atomic = 1, .min_rnr_timer = 1,
		.rnr_retry = 7, .timeout = 14, .retry_cnt = 3,
	};
	double t = 4.096e-6 * (1 << 14);

	run(&o, 1, IBV_WC_RETRY_EXC_ERR, t * 4 * 0.95, t * 4 + 0.5);
}

/* No receive WQE and rnr_retry 0: the first RNR NAK is final. */
static void
rnr_retry_zero_exceeded(void)
{
	struct pair_opts o = {
		.buflen = 65536, .mr_access = IBV_ACCESS_LOCAL_WRITE,
		.qp_access = IBV_ACCESS_LOCAL_WRITE, .max_wr = 4, .max_sge = 1,
		.sq_sig_all = 1, .max_rd_atomic = 1, .min_rnr_timer = 14,
		.rnr_retry = 0, .timeout = 14, .retry_cnt = 7,
	};

	run(&o, 0, IBV_WC_RNR_RETRY_EXC_ERR, 0, 1);
}

/* rnr_retry 2: three tries, each after the 1.28 ms the NAK asks for. */
static void
rnr_retry_counted(void)
{
	struct pair_opts o = {
		.buflen = 65536, .mr_access = IBV_ACCESS_LOCAL_WRITE,
		.qp_access = IBV_ACCESS_LOCAL_WRITE, .max_wr = 4, .max_sge = 1,
		.sq_sig_all = 1, .max_rd_atomic = 1, .min_rnr_timer = 14,
		.rnr_retry = 2, .timeout = 14, .retry_cnt = 7,
	};

	run(&o, 0, IBV_WC_RNR_RETRY_EXC_ERR, 2 * 1.28e-3, 1);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "lost") == 0) {
		RUN(lost_peer_retry_exceeded);
	} else {
		RUN(rnr_retry_zero_exceeded);
		RUN(rnr_retry_counted);
	}
	CHECK_DONE();
}
