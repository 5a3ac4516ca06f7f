/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * test_verbs: UD and UC semantics (ibv_post_send(3) table 1, Q_Key rules, GRH), SQD,
 * posting in INIT/RTR, multicast, post limits, remote operational errors, FENCE.
 */
#include "verbs_lb.h"

/* An AH to the device's own GID 0. */
struct ibv_ah *
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
void
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
void
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

		while (landed(buf + 512 * 1024, buf, 3000) < 3000 &&
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
void
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

/* UD multicast: every attached QP gets a copy, a detached one does not. */
void
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
		union ibv_gid uni, v6, zero = { .raw = { 0 } };
		union ibv_gid grp6 = { .raw = { 0xff, 0x0e, [14] = 0x12,
						[15] = 0x34 } };

		CHECK(ibv_query_gid(ctx, 1, 0, &uni) == 0, "gid");
		CHECK(ibv_attach_mcast(m1, &uni, 0) == EINVAL,
		      "unicast GID attached");
		/* An IPv6 group only on a device with an IPv6 GID (index 1). */
		CHECK(ibv_query_gid(ctx, 1, 1, &v6) == 0, "gid 1");
		if (memcmp(&v6, &zero, sizeof(v6)) == 0)
			CHECK(ibv_attach_mcast(m1, &grp6, 0) == EINVAL,
			      "IPv6 group attached without an IPv6 address");
		else
			CHECK(ibv_attach_mcast(m1, &grp6, 0) == 0 &&
			      ibv_detach_mcast(m1, &grp6, 0) == 0,
			      "IPv6 group");
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
void
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

/* C10-96: posting sends in Init and RTR is an immediate error too. */
void
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
void
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

/* A receive WQE with a bad lkey: LOC_PROT_ERR at the responder, NAK remote
 * operational error, IBV_WC_REM_OP_ERR at the requester (IBA 9.7.5.2.4).
 */
void
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
void
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
