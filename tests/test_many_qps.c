/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * test_many_qps: thousands of RC QPs with work outstanding on the loopback
 * device lose nothing. 4096 connected pairs on one CQ, every requester
 * with two 64-byte WRITEs outstanding, each completion bringing its
 * requester the next, 24 per requester: every completion a success within
 * the deadline, every target slot holding its pair's last WRITE, and no
 * frame dropped on the way out (tx_drop_queue_full) nor any retransmission
 * timeout. Then the same with READs of 16 KiB on 512 of the pairs, whose
 * responses fill the transmit queue while the other pairs' WRITEs want
 * their ACKs.
 *
 * With that many QPs a pass queues thousands of frames while the port
 * takes a ring's worth; requesters once filled the transmit queue to the
 * last slot, the ACKs of the frames received next found it full and were
 * dropped, and their requesters waited for the transport timer (dpib-perf
 * -Q 4096: 43 frames dropped, a timeout). Requesters now leave room for
 * what the receive side owes (IB_TX_RESERVE), and an ACK that finds the
 * queue full all the same (responses took it) waits for room.
 *
 * Then fairness when the port is the bottleneck: 256 pairs, each
 * requester with 8 READs of 256 KiB outstanding, so that the responders
 * have far more to send than a pass can queue. Every requester must see
 * its first READ complete before half of all the READs have: a pass that
 * serves the QPs in a fixed order until the queue is full gave the first
 * ones everything and the rest nothing until those were done (over memif,
 * perftest ib_read_bw -s 1048576 -q 64: timer expiries, RETRY_EXC_ERR).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "dpib.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint8_t *buf;
static struct ibv_mr *mr;

#define NPAIR		4096u
#define DEPTH		2u		/* WRs outstanding per requester */
#define PER_QP		24u		/* WRs per requester */
#define SLOT		64u
#define NREAD		512u		/* pairs that READ, in the second run */
#define READ_LEN	16384u
#define SRC(i, k)	(buf + ((size_t)(i) * DEPTH + (k) % DEPTH) * SLOT)
#define DST(i)		(buf + (size_t)(NPAIR * DEPTH + (i)) * SLOT)
#define RSRC		(buf + (size_t)(NPAIR * (DEPTH + 1)) * SLOT)
#define RDST(i, k)	(RSRC + ((size_t)(i) * DEPTH + (k) % DEPTH + 1) * \
			 READ_LEN)
#define BUF_LEN		((size_t)(NPAIR * (DEPTH + 1)) * SLOT + \
			 (size_t)(NREAD * DEPTH + 1) * READ_LEN)

#include "verbs_util.h"

/*
 * A transport timer of 4.3 s (20): only a lost frame outlasts it. At the
 * usual 67 ms (14) a CI run that shared the CPUs with another suite saw
 * 55 expiries in the READ run, none of them a loss (nothing dropped).
 */
static const struct pair_opts opts = {
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.max_rd_atomic = DEPTH, .min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 20, .retry_cnt = 7,
};

/* @npair connected pairs of RC QPs on @cq, into @qp (2 * @npair). */
static void
pairs_up(struct ibv_qp **qp, uint32_t npair, struct ibv_cq *cq,
	 uint32_t max_wr, const struct pair_opts *o)
{
	uint32_t i;

	for (i = 0; i < 2 * npair; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = max_wr, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp[i] = ibv_create_qp(pd, &ia);
		CHECK(qp[i] != NULL, "create_qp %u: errno %d", i, errno);
	}
	for (i = 0; i < npair; i++) {
		qp_connect(qp[2 * i], qp[2 * i + 1]->qp_num, o,
			   IBV_MTU_4096, 0x100, 0x200);
		qp_connect(qp[2 * i + 1], qp[2 * i]->qp_num, o,
			   IBV_MTU_4096, 0x200, 0x100);
	}
}

/* The k-th WRITE of pair @i: its source slot stamped (pair, k) first. */
static void
post_write(struct ibv_qp *qp, uint32_t i, uint32_t k)
{
	uint32_t stamp[2] = { i, k };
	struct ibv_sge sge = { (uintptr_t)SRC(i, k), SLOT, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = ((uint64_t)i << 32) | k, .sg_list = &sge,
		.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)DST(i), mr->rkey },
	}, *bad;
	int ret;

	/* A source slot per WRITE in flight; RC places a QP's WRITEs in
	 * order, so the target slot ends with the last one's stamp.
	 */
	memcpy(SRC(i, k), stamp, sizeof(stamp));
	ret = ibv_post_send(qp, &wr, &bad);
	CHECK(ret == 0, "post WRITE %u of pair %u: %d", k, i, ret);
}

/* The k-th READ of pair @i: the shared pattern into a slot of its own. */
static void
post_read(struct ibv_qp *qp, uint32_t i, uint32_t k)
{
	struct ibv_sge sge = { (uintptr_t)RDST(i, k), READ_LEN, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = ((uint64_t)i << 32) | k, .sg_list = &sge,
		.num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)RSRC, mr->rkey },
	}, *bad;
	int ret;

	memset(RDST(i, k), 0, READ_LEN);
	ret = ibv_post_send(qp, &wr, &bad);
	CHECK(ret == 0, "post READ %u of pair %u: %d", k, i, ret);
}

static void
post_next(struct ibv_qp *qp, uint32_t nread, uint32_t i, uint32_t k)
{
	if (i < nread)
		post_read(qp, i, k);
	else
		post_write(qp, i, k);
}

/* All pairs WRITE, or the first @nread READ. */
static void
many_qps(uint32_t nread)
{
	struct ibv_qp **qp = calloc(2 * NPAIR, sizeof(*qp));
	uint32_t *sent = calloc(NPAIR, sizeof(*sent));
	uint32_t *got = calloc(NPAIR, sizeof(*got));
	uint64_t drops0, timeouts0, done = 0;
	struct ibv_wc wc[64];
	struct ibv_cq *cq;
	uint32_t i, k;
	double deadline;
	int n, j;

	CHECK(qp != NULL && sent != NULL && got != NULL, "arrays");
	cq = ibv_create_cq(ctx, (int)(NPAIR * DEPTH + 64), NULL, NULL, 0);
	CHECK(cq != NULL, "create_cq errno %d", errno);
	pairs_up(qp, NPAIR, cq, DEPTH, &opts);
	for (i = 0; i < READ_LEN; i++)
		RSRC[i] = (uint8_t)(i * 7 + 1);
	drops0 = dev_counter(ctx, "tx_drop_queue_full");
	timeouts0 = dev_counter(ctx, "retransmit_timeout");

	for (i = 0; i < NPAIR; i++)
		for (k = 0; k < DEPTH; k++)
			post_next(qp[2 * i], nread, i, sent[i]++);
	deadline = check_now() + 60;
	while (done < (uint64_t)NPAIR * PER_QP) {
		CHECK(check_now() < deadline, "%" PRIu64 " of %u completions "
		      "within 60 s", done, NPAIR * PER_QP);
		n = ibv_poll_cq(cq, 64, wc);
		CHECK(n >= 0, "poll_cq %d", n);
		for (j = 0; j < n; j++) {
			i = (uint32_t)(wc[j].wr_id >> 32);
			k = (uint32_t)wc[j].wr_id;
			CHECK(i < NPAIR && wc[j].status == IBV_WC_SUCCESS &&
			      wc[j].opcode == (i < nread ? IBV_WC_RDMA_READ :
					       IBV_WC_RDMA_WRITE),
			      "pair %u WR %u: %s, opcode %d", i, k,
			      ibv_wc_status_str(wc[j].status), wc[j].opcode);
			CHECK(k == got[i], "pair %u: completion %u, want %u "
			      "(in order)", i, k, got[i]);
			CHECK(i >= nread ||
			      memcmp(RDST(i, k), RSRC, READ_LEN) == 0,
			      "pair %u READ %u: the bytes differ", i, k);
			got[i]++;
			done++;
			if (sent[i] < PER_QP)
				post_next(qp[2 * i], nread, i, sent[i]++);
		}
	}
	for (i = nread; i < NPAIR; i++) {
		uint32_t stamp[2];

		memcpy(stamp, DST(i), sizeof(stamp));
		CHECK(stamp[0] == i && stamp[1] == PER_QP - 1,
		      "pair %u's slot holds (%u, %u)", i, stamp[0], stamp[1]);
	}
	CHECK(dev_counter(ctx, "tx_drop_queue_full") == drops0,
	      "%" PRIu64 " frames dropped on a full transmit queue",
	      dev_counter(ctx, "tx_drop_queue_full") - drops0);
	CHECK(dev_counter(ctx, "retransmit_timeout") == timeouts0,
	      "%" PRIu64 " retransmission timeouts",
	      dev_counter(ctx, "retransmit_timeout") - timeouts0);
	printf("  %u pairs, %u READs and %u WRITEs: no drop, no timeout\n",
	       NPAIR, nread * PER_QP, (NPAIR - nread) * PER_QP);
	for (i = 0; i < 2 * NPAIR; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0, "destroy_qp %u", i);
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
	free(qp);
	free(sent);
	free(got);
}

#define FPAIR		256u
#define FREADS		8u		/* READs outstanding per requester */
#define FLEN		(256u << 10)

static void
reads_shared(void)
{
	struct pair_opts o = opts;
	size_t len = (size_t)(FPAIR + 1) * FLEN;
	uint8_t *fb = aligned_alloc(4096, len);
	struct ibv_qp **qp = calloc(2 * FPAIR, sizeof(*qp));
	uint32_t *got = calloc(FPAIR, sizeof(*got));
	uint32_t i, k, done = 0, half = FPAIR * FREADS / 2, first = 0;
	struct ibv_wc wc[64];
	struct ibv_mr *fmr;
	struct ibv_cq *cq;
	double deadline;
	int n, j;

	CHECK(fb != NULL && qp != NULL && got != NULL, "arrays");
	o.max_rd_atomic = FREADS;
	for (i = 0; i < FLEN; i++)
		fb[i] = (uint8_t)(i * 13 + 5);
	fmr = ibv_reg_mr(pd, fb, len, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_READ);
	CHECK(fmr != NULL, "reg_mr errno %d", errno);
	cq = ibv_create_cq(ctx, (int)(FPAIR * FREADS + 64), NULL, NULL, 0);
	CHECK(cq != NULL, "create_cq errno %d", errno);
	pairs_up(qp, FPAIR, cq, FREADS, &o);
	for (i = 0; i < FPAIR; i++)
		for (k = 0; k < FREADS; k++) {
			struct ibv_sge sge = { (uintptr_t)fb + (i + 1) * FLEN,
					       FLEN, fmr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = ((uint64_t)i << 32) | k,
				.sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_RDMA_READ,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { (uintptr_t)fb, fmr->rkey },
			}, *bad;

			CHECK(ibv_post_send(qp[2 * i], &wr, &bad) == 0,
			      "post READ %u of pair %u", k, i);
		}
	deadline = check_now() + 60;
	while (done < FPAIR * FREADS) {
		CHECK(check_now() < deadline, "%u of %u READs within 60 s",
		      done, FPAIR * FREADS);
		n = ibv_poll_cq(cq, 64, wc);
		CHECK(n >= 0, "poll_cq %d", n);
		for (j = 0; j < n; j++) {
			i = (uint32_t)(wc[j].wr_id >> 32);
			CHECK(i < FPAIR && wc[j].status == IBV_WC_SUCCESS,
			      "pair %u: %s", i,
			      ibv_wc_status_str(wc[j].status));
			if (got[i]++ == 0)
				first++;
			if (++done == half)
				CHECK(first == FPAIR, "half the READs done, "
				      "and %u of %u requesters still wait "
				      "for their first", FPAIR - first, FPAIR);
		}
	}
	for (i = 0; i < FPAIR; i++)
		CHECK(memcmp(fb + (i + 1) * FLEN, fb, FLEN) == 0,
		      "pair %u: the bytes differ", i);
	printf("  %u pairs, %u READs of 256 KiB: every requester served "
	       "before half were done\n", FPAIR, FPAIR * FREADS);
	for (i = 0; i < 2 * FPAIR; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0, "destroy_qp %u", i);
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_dereg_mr(fmr) == 0, "cleanup");
	free(qp);
	free(got);
	free(fb);
}

static void
writes(void)
{
	many_qps(0);
}

static void
reads_and_writes(void)
{
	many_qps(NREAD);
}

int
main(void)
{
	struct ibv_device **list;

	ctx = open_first(&list, &pd, &buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &mr);
	RUN(writes);
	RUN(reads_and_writes);
	RUN(reads_shared);
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0, "cleanup");
	CHECK(ibv_close_device(ctx) == 0, "close");
	ibv_free_device_list(list);
	free(buf);
	CHECK_DONE();
}
