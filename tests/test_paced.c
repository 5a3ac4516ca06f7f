/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * test_paced: the transport timer times the peer, not the QP's own pacer.
 * A QP that its peer's CNPs cut to the DCQCN floor (tests/conf/paced.conf:
 * 2 Mbit/s, and no rate increase for a second) sends a 64 KiB SEND at path
 * MTU 256: 256 packets, about 330 ms on the wire at that rate, against a
 * transport timeout of 67 ms and a retry count of 1. The message must
 * complete, in order, with no timer expiry (one is let pass: a stall of a
 * loaded test machine); before the fix each expiry rewound the message to
 * its first packet, and the second failed it with RETRY_EXC_ERR.
 *
 * test_paced link: the same for a message that the link, not the QP's
 * pacer, holds back: the loopback device behind a 100 Mbit/s switch port
 * (DPIB_FAULTS rate_mbps=100,queue=512: at most 45 ms of frames queued),
 * a 4 MiB WRITE at path MTU 1024, about 0.35 s on the wire, against the
 * same 67 ms timeout and retry count of 1. Its ACKs keep coming, each
 * acknowledging part of the message: forward progress, which restarts
 * the timer (IBA 9.7.6.1.3). Restarted only when a whole WQE completed,
 * the timer expired every 67 ms and the second expiry failed the WRITE.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "roce_frame.h"

#define LEN	65536

static struct pair P;

static const struct pair_opts opts = {
	.buflen = 4 * LEN,
	.mr_access = IBV_ACCESS_LOCAL_WRITE,
	.qp_access = IBV_ACCESS_LOCAL_WRITE,
	.sq_sig_all = 1, .max_wr = 16, .max_sge = 1,
	.min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 14,		/* 67 ms */
	.retry_cnt = 1,		/* a second expiry fails the WR */
};

static void
paced_message_outlasts_timeout(void)
{
	uint8_t f[256], zero[16] = { 0 };
	uint64_t expiries = counter(&P, "retransmit_timeout");
	uint64_t cuts = counter(&P, "dcqcn_rate_cut");
	struct ibv_sge rs = { (uintptr_t)P.buf + LEN, LEN, P.mr->lkey };
	struct ibv_sge ss = { (uintptr_t)P.buf, LEN, P.mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 },
			   *rbad;
	struct ibv_send_wr s = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_wc wc;
	double t0, took;
	uint32_t i, n;

	/* The peer's CNPs: each halves the rate, from the line rate down
	 * to the floor.
	 */
	n = frame(f, htonl(INADDR_LOOPBACK), IB_CNP, P.qp[0]->qp_num, 0, zero,
		  16, NULL, 0);
	for (i = 0; i < 24; i++)
		inject_sync(&P, f, n);
	CHECK(counter(&P, "dcqcn_rate_cut") == cuts + 24, "%" PRIu64
	      " rate cuts of 24 CNPs", counter(&P, "dcqcn_rate_cut") - cuts);

	fill_pattern(P.buf, LEN, 7);
	CHECK(ibv_post_recv(P.qp[1], &r, &rbad) == 0, "post_recv");
	t0 = check_now();
	CHECK(ibv_post_send(P.qp[0], &s, &sbad) == 0, "post_send");
	CHECK(poll_one(P.cq[0], &wc, 10), "no send completion");
	took = check_now() - t0;
	CHECK(wc.wr_id == 2 && wc.status == IBV_WC_SUCCESS, "send: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(poll_one(P.cq[1], &wc, 10), "no receive completion");
	CHECK(wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS &&
	      wc.byte_len == LEN, "receive: %s, %u bytes",
	      ibv_wc_status_str(wc.status), wc.byte_len);
	CHECK(memcmp(P.buf, P.buf + LEN, LEN) == 0, "the message differs");
	printf("# 64 KiB at path MTU 256, paced: %.3f s, %" PRIu64
	       " timer expiries\n", took,
	       counter(&P, "retransmit_timeout") - expiries);
	/* Paced, it took several timeouts to send... */
	CHECK(took > 0.2, "%.3f s: the QP was not paced down", took);
	/* ...and the timer did not count that: at most one expiry (a stall
	 * of the test machine), where counting it took one every 67 ms.
	 */
	CHECK(counter(&P, "retransmit_timeout") <= expiries + 1,
	      "the transport timer expired %" PRIu64 " times",
	      counter(&P, "retransmit_timeout") - expiries);
}

#define LINK_LEN	(4u << 20)

static void
link_message_outlasts_timeout(void)
{
	uint64_t expiries = counter(&P, "retransmit_timeout");
	struct ibv_sge ss = { (uintptr_t)P.buf, LINK_LEN, P.mr->lkey };
	struct ibv_send_wr s = { .wr_id = 3, .sg_list = &ss, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { (uintptr_t)P.buf + LINK_LEN,
					      P.mr->rkey } }, *sbad;
	struct ibv_wc wc;
	double t0, took;

	fill_pattern(P.buf, LINK_LEN, 11);
	memset(P.buf + LINK_LEN, 0, LINK_LEN);
	t0 = check_now();
	CHECK(ibv_post_send(P.qp[0], &s, &sbad) == 0, "post_send");
	CHECK(poll_one(P.cq[0], &wc, 20), "no WRITE completion");
	took = check_now() - t0;
	CHECK(wc.wr_id == 3 && wc.status == IBV_WC_SUCCESS, "WRITE: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(memcmp(P.buf, P.buf + LINK_LEN, LINK_LEN) == 0,
	      "the message differs");
	printf("# 4 MiB at path MTU 1024 behind 100 Mbit/s: %.3f s, %" PRIu64
	       " timer expiries\n", took,
	       counter(&P, "retransmit_timeout") - expiries);
	CHECK(took > 0.2, "%.3f s: the link did not hold the message back",
	      took);
	CHECK(counter(&P, "retransmit_timeout") <= expiries + 1,
	      "the transport timer expired %" PRIu64 " times",
	      counter(&P, "retransmit_timeout") - expiries);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "link") == 0) {
		struct pair_opts o = opts;

		o.buflen = 2 * LINK_LEN;
		o.qp_access |= IBV_ACCESS_REMOTE_WRITE;
		o.mr_access |= IBV_ACCESS_REMOTE_WRITE;
		pair_open(&P, &o);
		qp_connect(P.qp[0], P.qp[1]->qp_num, &o, IBV_MTU_1024, 0x100,
			   0x200);
		qp_connect(P.qp[1], P.qp[0]->qp_num, &o, IBV_MTU_1024, 0x200,
			   0x100);
		RUN(link_message_outlasts_timeout);
		pair_close(&P);
		CHECK_DONE();
	}
	pair_open(&P, &opts);
	qp_connect(P.qp[0], P.qp[1]->qp_num, &opts, IBV_MTU_256, 0x100, 0x200);
	qp_connect(P.qp[1], P.qp[0]->qp_num, &opts, IBV_MTU_256, 0x200, 0x100);
	RUN(paced_message_outlasts_timeout);
	pair_close(&P);
	CHECK_DONE();
}
