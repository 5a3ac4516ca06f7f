/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The first verbs program of the seed document 002 (sections 3-7), written
 * the way a verbs user writes it: enumerate devices, open one, create a PD,
 * an MR, one CQ and two RC QPs in one process, connect them (Reset -> Init
 * -> RTR -> RTS with the document's attribute masks), post one receive and
 * one SEND_WITH_IMM, and poll the CQ. The only addition is a time limit on
 * the polling loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "check.h"

#define BUF_SIZE 4096
#define IMM 0x12345678u

static void
modify_to_rts(struct ibv_qp *qp, uint8_t port, uint16_t dlid,
	      uint32_t dest_qpn, uint32_t rq_psn, uint32_t sq_psn)
{
	int ret;

	struct ibv_qp_attr init_attr = {
		.qp_state        = IBV_QPS_INIT,
		.pkey_index      = 0,
		.port_num        = port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};

	ret = ibv_modify_qp(qp, &init_attr,
			    IBV_QP_STATE|IBV_QP_PKEY_INDEX|IBV_QP_PORT|IBV_QP_ACCESS_FLAGS);
	CHECK(ret == 0, "Reset->Init: %d", ret);

	struct ibv_qp_attr rtr_attr = {
		.qp_state               = IBV_QPS_RTR,
		.path_mtu               = IBV_MTU_4096,
		.dest_qp_num            = dest_qpn,
		.rq_psn                 = rq_psn,
		.max_dest_rd_atomic     = 0,
		.min_rnr_timer          = 0,
		.ah_attr                = {
			.is_global          = 1,
			.dlid               = dlid,
			.sl                 = 0,
			.src_path_bits      = 0,
			.port_num           = port,
		},
	};
	/* The document's program addresses by LID (InfiniBand); on a RoCE
	 * port the AV needs a GRH with the peer's GID, as on rxe and mlx5:
	 * here the device's own GID 0.
	 */
	rtr_attr.ah_attr.grh.hop_limit = 64;
	ret = ibv_query_gid(qp->context, port, 0, &rtr_attr.ah_attr.grh.dgid);
	CHECK(ret == 0, "ibv_query_gid: %d", ret);

	ret = ibv_modify_qp(qp, &rtr_attr,
			    IBV_QP_STATE|IBV_QP_AV|IBV_QP_PATH_MTU|IBV_QP_DEST_QPN|IBV_QP_RQ_PSN|IBV_QP_MAX_DEST_RD_ATOMIC|IBV_QP_MIN_RNR_TIMER);
	CHECK(ret == 0, "Init->RTR: %d", ret);

	struct ibv_qp_attr rts_attr = {
		.qp_state           = IBV_QPS_RTS,
		.timeout            = 0,
		.retry_cnt          = 7,
		.rnr_retry          = 7,
		.sq_psn             = sq_psn,
		.max_rd_atomic      = 0,
	};

	ret = ibv_modify_qp(qp, &rts_attr,
			    IBV_QP_STATE|IBV_QP_TIMEOUT|IBV_QP_RETRY_CNT|IBV_QP_RNR_RETRY|IBV_QP_SQ_PSN|IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(ret == 0, "RTR->RTS: %d", ret);
}

static void
seed_sample(void)
{
	int i, ret;
	uint8_t port = 1;

	ret = ibv_fork_init();
	CHECK(ret == 0, "ibv_fork_init (errno=%d)", ret);

	/* 3. Enumerate the IB devices. */
	struct ibv_device **dev_list;
	dev_list = ibv_get_device_list(NULL);
	CHECK(dev_list != NULL, "ibv_get_device_list (errno=%d)", errno);
	for (i = 0; dev_list[i]; i++)
		printf("%s GUID:%016" PRIx64 "\n",
		       ibv_get_device_name(dev_list[i]),
		       (uint64_t)ibv_get_device_guid(dev_list[i]));
	CHECK(i >= 1, "no device");
	CHECK(strcmp(ibv_get_device_name(dev_list[0]), "dpib0") == 0,
	      "first device is %s", ibv_get_device_name(dev_list[0]));

	/* 4. Open the device and create the objects. */
	struct ibv_context *context;
	context = ibv_open_device(dev_list[0]);
	CHECK(context != NULL, "ibv_open_device");

	struct ibv_port_attr port_attr;
	ret = ibv_query_port(context, port, &port_attr);
	CHECK(ret == 0, "ibv_query_port %d", ret);

	struct ibv_pd *pd;
	pd = ibv_alloc_pd(context);
	CHECK(pd != NULL, "ibv_alloc_pd");

	char *buf = calloc(2, BUF_SIZE);
	CHECK(buf != NULL, "calloc");
	struct ibv_mr *mr;
	int access = IBV_ACCESS_LOCAL_WRITE;
	mr = ibv_reg_mr(pd, buf, 2 * BUF_SIZE, access);
	CHECK(mr != NULL, "ibv_reg_mr errno=%d", errno);

	struct ibv_cq *cq;
	int cqe = 64;
	void *cq_context = NULL;
	cq = ibv_create_cq(context, cqe, cq_context,
			   NULL /* no completion channel */,
			   0    /* comp_vector */);
	CHECK(cq != NULL, "ibv_create_cq");

	struct ibv_qp *qp[2];
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr qp_init_attr = {
			.qp_type    = IBV_QPT_RC,
			.qp_context = NULL,
			.send_cq    = cq,
			.recv_cq    = cq,
			.srq        = NULL,
			.cap        = {
				.max_send_wr  = 32,
				.max_recv_wr  = 32,
				.max_send_sge =  1,
				.max_recv_sge =  1,
			},
			.sq_sig_all = 1,
		};

		qp[i] = ibv_create_qp(pd, &qp_init_attr);
		CHECK(qp[i] != NULL, "ibv_create_qp errno=%d", errno);
	}

	/* 5. Connect the two QPs; parameters are exchanged through memory. */
	modify_to_rts(qp[0], port, port_attr.lid, qp[1]->qp_num, 0x100, 0x200);
	modify_to_rts(qp[1], port, port_attr.lid, qp[0]->qp_num, 0x200, 0x100);

	/* 6.1 The receiver posts a receive WR. */
	char *rbuf = buf + BUF_SIZE, *sbuf = buf;
	struct ibv_sge rsge = {
		.addr   = (uint64_t)(uintptr_t)rbuf,
		.length = BUF_SIZE,
		.lkey   = mr->lkey,
	};
	struct ibv_recv_wr recv_wr = {
		.wr_id   = (uint64_t)(uintptr_t)rsge.addr,
		.next    = NULL,
		.sg_list = &rsge,
		.num_sge = 1,
	};
	struct ibv_recv_wr *bad_recv_wr;
	ret = ibv_post_recv(qp[1], &recv_wr, &bad_recv_wr);
	CHECK(ret == 0, "ibv_post_recv %d", ret);

	/* 6.2 The sender posts a SEND_WITH_IMM. */
	const char msg[] = "Hello, InfiniBand Verbs on dpib!";
	memcpy(sbuf, msg, sizeof(msg));
	struct ibv_sge ssge = {
		.addr   = (uint64_t)(uintptr_t)sbuf,
		.length = sizeof(msg),
		.lkey   = mr->lkey,
	};
	struct ibv_send_wr send_wr = {
		.wr_id      = (uint64_t)(uintptr_t)ssge.addr,
		.next       = NULL,
		.sg_list    = &ssge,
		.num_sge    = 1,
		.opcode     = IBV_WR_SEND_WITH_IMM,
		.send_flags = 0,
		.imm_data   = htonl(IMM),
	};
	struct ibv_send_wr *bad_wr;
	ret = ibv_post_send(qp[0], &send_wr, &bad_wr);
	CHECK(ret == 0, "ibv_post_send %d", ret);

	/* 7. Poll the CQ: the SEND completion, then the RECV. */
	struct ibv_wc wc;
	int got_send = 0, got_recv = 0;
	double deadline = check_now() + 10;
	while (!got_recv || !got_send) {
		ret = ibv_poll_cq(cq, 1, &wc);
		CHECK(ret >= 0, "ibv_poll_cq %d", ret);
		if (ret == 0) {
			CHECK(check_now() < deadline, "no completion in 10 s");
			continue;
		}
		CHECK(wc.status == IBV_WC_SUCCESS, "Completion error: %s",
		      ibv_wc_status_str(wc.status));
		switch (wc.opcode) {
		case IBV_WC_SEND:
			CHECK(wc.wr_id == send_wr.wr_id, "send wr_id");
			CHECK(wc.qp_num == qp[0]->qp_num, "send qp_num");
			got_send++;
			break;
		case IBV_WC_RECV:
			printf("Success: wr_id=%016" PRIx64 " byte_len=%u, imm_data=%x\n",
			       wc.wr_id, wc.byte_len, ntohl(wc.imm_data));
			CHECK(wc.wr_id == recv_wr.wr_id, "recv wr_id");
			CHECK(wc.byte_len == sizeof(msg), "byte_len %u", wc.byte_len);
			CHECK(wc.wc_flags & IBV_WC_WITH_IMM, "no IBV_WC_WITH_IMM");
			CHECK(ntohl(wc.imm_data) == IMM, "imm %x", ntohl(wc.imm_data));
			CHECK(wc.qp_num == qp[1]->qp_num, "recv qp_num");
			CHECK(memcmp(rbuf, msg, sizeof(msg)) == 0, "payload");
			got_recv++;
			break;
		default:
			CHECK(0, "unexpected opcode %d", wc.opcode);
		}
	}
	CHECK(got_send == 1 && got_recv == 1, "completions %d/%d", got_send,
	      got_recv);
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "extra completion");

	for (i = 0; i < 2; i++)
		CHECK(ibv_destroy_qp(qp[i]) == 0, "ibv_destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
	CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
	CHECK(ibv_close_device(context) == 0, "ibv_close_device");
	ibv_free_device_list(dev_list);
	free(buf);
}

int
main(void)
{
	RUN(seed_sample);
	CHECK_DONE();
}
