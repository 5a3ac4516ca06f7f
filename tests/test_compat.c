/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Behaviours that unmodified programs expect because rxe and mlx5 have
 * them (issue 15):
 *  - an SGE of length 0 is zero bytes (not 2^31): zero-length WRITE, READ
 *    and SEND, with and without immediate, on RC, UC and UD, through
 *    ibv_post_send and the ibv_wr_* API, complete successfully; a
 *    zero-length RDMA operation's rkey is not checked (IBA 9.7.4.1.3), the
 *    QP's access rights still are; a zero-length SGE is skipped whatever
 *    its lkey;
 *  - 128 outstanding READ/atomics per QP, in both directions (rxe's
 *    max_qp_rd_atom, which perftest copies from the peer);
 *  - window binds ignore local access bits (type 2, ibv_post_send and
 *    ibv_wr_bind_mw; type 1 is in test_mw);
 *  - ibv_create_qp_ex takes every comp_mask bit whose field asks for
 *    nothing dpib lacks.
 */
#include <stddef.h>
#include <stdlib.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>

#include "verbs_util.h"

/* rdma-core's marshall.h, which Debian does not ship, declares these. */
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
			       struct ibv_sa_path_rec *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
				 struct ib_user_path_rec *src);
/* ... and its driver.h these, which libibverbs.so.1 exports too. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);
const char *ibv_get_sysfs_path(void);

#define BOGUS_KEY	0xdeadbe00u

static const struct pair_opts rc = {
	.buflen = 1 << 20,
	.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		     IBV_ACCESS_MW_BIND,
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	.sq_sig_all = 1, .max_wr = 256, .max_sge = 4, .max_inline = 64,
	.max_rd_atomic = 128, .min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 14, .retry_cnt = 7,
};

static void
post_recv(struct pair *p, int i, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)p->buf + 4096 * i, 4096,
			       p->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	CHECK(ibv_post_recv(p->qp[i], &wr, &bad) == 0, "post_recv");
}

/* A WR with @nsge SGEs of length 0 (the first with @lkey). */
static int
post0(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, int nsge,
      uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge[2] = { { (uintptr_t)&sge, 0, lkey },
				  { 0, 0, BOGUS_KEY } };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = sge, .num_sge = nsge, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(0x1234),
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static void
expect_wc(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status status,
	  uint32_t byte_len)
{
	struct ibv_wc wc;

	CHECK(poll_one(cq, &wc, 5), "no completion for %lu",
	      (unsigned long)wr_id);
	CHECK(wc.wr_id == wr_id && wc.status == status,
	      "wr %lu: %s, wanted wr %lu %s", (unsigned long)wc.wr_id,
	      ibv_wc_status_str(wc.status), (unsigned long)wr_id,
	      ibv_wc_status_str(status));
	if (status == IBV_WC_SUCCESS && (wc.opcode & IBV_WC_RECV))
		CHECK(wc.byte_len == byte_len, "byte_len %u", wc.byte_len);
}

/* RC and UC through ibv_post_send: every opcode with no bytes. */
static void
zero_length_classic(void)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC };
	struct pair p;
	uint32_t t;

	for (t = 0; t < DIM(types); t++) {
		struct pair_opts o = rc;

		pair_open(&p, &o);
		if (types[t] == IBV_QPT_UC) {
			/* The pair is RC: make a UC pair from scratch. */
			pair_make_uc(&p, &o, 1);
		} else {
			pair_connect(&p, &o);
		}
		/* WRITE: no SGE, one empty SGE, an empty SGE with a bogus
		 * lkey; the rkey is not looked at for zero bytes.
		 */
		CHECK(post0(p.qp[0], IBV_WR_RDMA_WRITE, 1, 0, 0,
			    (uintptr_t)p.buf, p.mr->rkey) == 0, "post");
		expect_wc(p.cq[0], 1, IBV_WC_SUCCESS, 0);
		CHECK(post0(p.qp[0], IBV_WR_RDMA_WRITE, 2, 1, p.mr->lkey,
			    (uintptr_t)p.buf, p.mr->rkey) == 0, "post");
		expect_wc(p.cq[0], 2, IBV_WC_SUCCESS, 0);
		CHECK(post0(p.qp[0], IBV_WR_RDMA_WRITE, 3, 2, BOGUS_KEY, 0,
			    BOGUS_KEY) == 0, "post");
		expect_wc(p.cq[0], 3, IBV_WC_SUCCESS, 0);
		/* WRITE with immediate: the receiver's WQE completes. */
		post_recv(&p, 1, 100);
		CHECK(post0(p.qp[0], IBV_WR_RDMA_WRITE_WITH_IMM, 4, 1,
			    p.mr->lkey, 0, BOGUS_KEY) == 0, "post");
		expect_wc(p.cq[0], 4, IBV_WC_SUCCESS, 0);
		expect_wc(p.cq[1], 100, IBV_WC_SUCCESS, 0);
		/* SEND and SEND with immediate. */
		post_recv(&p, 1, 101);
		post_recv(&p, 1, 102);
		CHECK(post0(p.qp[0], IBV_WR_SEND, 5, 1, p.mr->lkey, 0, 0) == 0,
		      "post");
		CHECK(post0(p.qp[0], IBV_WR_SEND_WITH_IMM, 6, 0, 0, 0, 0) == 0,
		      "post");
		expect_wc(p.cq[0], 5, IBV_WC_SUCCESS, 0);
		expect_wc(p.cq[0], 6, IBV_WC_SUCCESS, 0);
		expect_wc(p.cq[1], 101, IBV_WC_SUCCESS, 0);
		expect_wc(p.cq[1], 102, IBV_WC_SUCCESS, 0);
		if (types[t] == IBV_QPT_RC) {
			/* READ of nothing, through a bogus rkey. */
			CHECK(post0(p.qp[0], IBV_WR_RDMA_READ, 7, 1,
				    p.mr->lkey, 0, BOGUS_KEY) == 0, "post");
			expect_wc(p.cq[0], 7, IBV_WC_SUCCESS, 0);
		}
		pair_close(&p);
	}
}

/* The QP's rights are still checked: no remote write, no WRITE. */
static void
zero_length_checks_qp_access(void)
{
	struct pair_opts o = rc;
	struct pair p;

	o.qp_access = IBV_ACCESS_LOCAL_WRITE;
	pair_open(&p, &o);
	pair_connect(&p, &o);
	CHECK(post0(p.qp[0], IBV_WR_RDMA_WRITE, 1, 1, p.mr->lkey, 0,
		    BOGUS_KEY) == 0, "post");
	expect_wc(p.cq[0], 1, IBV_WC_REM_ACCESS_ERR, 0);
	pair_close(&p);
}

/* The same through ibv_wr_*: ibv_wr_set_sge(qpx, lkey, addr, 0). */
static void
zero_length_wr_api(void)
{
	struct pair p;
	struct ibv_qp_ex *x;

	pair_open_ex(&p, &rc, IBV_WC_STANDARD_FLAGS,
		     IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);
	pair_connect(&p, &rc);
	x = p.qpx[0];
	post_recv(&p, 1, 200);
	post_recv(&p, 1, 201);
	ibv_wr_start(x);
	x->wr_id = 11;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, BOGUS_KEY, 0);
	ibv_wr_set_sge(x, p.mr->lkey, (uintptr_t)p.buf, 0);
	x->wr_id = 12;
	ibv_wr_rdma_read(x, BOGUS_KEY, 0);
	ibv_wr_set_sge(x, p.mr->lkey, (uintptr_t)p.buf, 0);
	x->wr_id = 13;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, p.mr->lkey, (uintptr_t)p.buf, 0);
	x->wr_id = 14;
	ibv_wr_rdma_write_imm(x, BOGUS_KEY, 0, htobe32(7));
	ibv_wr_set_sge(x, p.mr->lkey, (uintptr_t)p.buf, 0);
	CHECK(ibv_wr_complete(x) == 0, "wr_complete");
	expect_wc(p.cq[0], 11, IBV_WC_SUCCESS, 0);
	expect_wc(p.cq[0], 12, IBV_WC_SUCCESS, 0);
	expect_wc(p.cq[0], 13, IBV_WC_SUCCESS, 0);
	expect_wc(p.cq[0], 14, IBV_WC_SUCCESS, 0);
	expect_wc(p.cq[1], 200, IBV_WC_SUCCESS, 0);
	expect_wc(p.cq[1], 201, IBV_WC_SUCCESS, 0);
	pair_close(&p);
}

/* UD: a SEND of no bytes delivers the GRH (40 bytes) and nothing else. */
static void
zero_length_ud(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .hop_limit = 64 } };
	struct ibv_qp_ex *x;
	static uint8_t buf[4096];
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge rsge;

	CHECK(list != NULL && list[0] != NULL, "no device");
	ctx = ibv_open_device(list[0]);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(ctx != NULL && pd != NULL && cq != NULL, "open");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL, "reg_mr");
	{
		struct ibv_qp_init_attr_ex ix = {
			.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
			.send_cq = cq, .recv_cq = cq, .cap = ia.cap,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND,
		};

		qp = ibv_create_qp_ex(ctx, &ix);
	}
	CHECK(qp != NULL, "UD QP");
	ud_to_rts(qp, 0x1111);
	CHECK(ibv_query_gid(ctx, 1, 0, &aa.grh.dgid) == 0, "GID");
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah != NULL, "AH");
	rsge = (struct ibv_sge){ (uintptr_t)buf, sizeof(buf), mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 300, .sg_list = &rsge,
				    .num_sge = 1 };
	CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0, "post_recv");
	x = ibv_qp_to_qp_ex(qp);
	ibv_wr_start(x);
	x->wr_id = 21;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, qp->qp_num, 0x1111);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf + 100, 0);
	CHECK(ibv_wr_complete(x) == 0, "wr_complete");
	{
		struct ibv_wc wc[2];
		int n = 0, got_send = 0, got_recv = 0;
		double end = check_now() + 5;

		while ((got_send + got_recv) < 2 && check_now() < end) {
			int i, k = ibv_poll_cq(cq, 2, wc);

			CHECK(k >= 0, "poll");
			for (i = 0; i < k; i++, n++) {
				CHECK(wc[i].status == IBV_WC_SUCCESS,
				      "wr %lu: %s", (unsigned long)wc[i].wr_id,
				      ibv_wc_status_str(wc[i].status));
				if (wc[i].wr_id == 21)
					got_send = 1;
				if (wc[i].wr_id == 300) {
					got_recv = 1;
					CHECK(wc[i].byte_len == 40,
					      "UD byte_len %u", wc[i].byte_len);
				}
			}
		}
		CHECK(got_send && got_recv, "send %d recv %d", got_send,
		      got_recv);
	}
	CHECK(ibv_destroy_qp(qp) == 0 && ibv_destroy_ah(ah) == 0 &&
	      ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0 &&
	      ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0, "close");
	ibv_free_device_list(list);
}

/*
 * 128 READ/atomics per QP: advertised, accepted by ibv_modify_qp in both
 * directions (129 is EINVAL), and 128 in flight at once complete with the
 * right data.
 */
static void
rd_atomic_128(void)
{
	struct ibv_device_attr da;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct pair p;
	int i;

	pair_open(&p, &rc);
	CHECK(ibv_query_device(p.ctx, &da) == 0, "query_device");
	CHECK(da.max_qp_rd_atom == 128 && da.max_qp_init_rd_atom == 128,
	      "max_qp_rd_atom %d, max_qp_init_rd_atom %d", da.max_qp_rd_atom,
	      da.max_qp_init_rd_atom);
	pair_connect(&p, &rc);
	CHECK(ibv_query_qp(p.qp[0], &a, IBV_QP_MAX_QP_RD_ATOMIC |
			   IBV_QP_MAX_DEST_RD_ATOMIC, &ia) == 0, "query_qp");
	CHECK(a.max_rd_atomic == 128 && a.max_dest_rd_atomic == 128,
	      "rd_atomic %u dest %u", a.max_rd_atomic, a.max_dest_rd_atomic);
	memset(&a, 0, sizeof(a));
	a.max_rd_atomic = 129;
	CHECK(ibv_modify_qp(p.qp[0], &a, IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL,
	      "max_rd_atomic 129");
	fill_pattern(p.buf + 512 * 1024, 256 * 1024, 5);
	/* 200 READs of 1 KiB posted at once: 128 at a time in flight. */
	for (i = 0; i < 200; i++) {
		struct ibv_sge sge = { (uintptr_t)p.buf + 1024 * i, 1024,
				       p.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.wr.rdma = { (uintptr_t)p.buf + 512 * 1024 + 1024 * i,
				     p.mr->rkey },
		}, *bad;

		CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post READ %d",
		      i);
	}
	for (i = 0; i < 200; i++)
		expect_wc(p.cq[0], i, IBV_WC_SUCCESS, 0);
	CHECK(memcmp(p.buf, p.buf + 512 * 1024, 200 * 1024) == 0,
	      "READ data");
	pair_close(&p);
}

/* A type 2 bind of @mw with @access; the completion status. */
static enum ibv_wc_status
bind2(struct pair *p, struct ibv_mw *mw, uint32_t access, int wr_api)
{
	struct ibv_mw_bind_info bi = { .mr = p->mr, .addr = (uintptr_t)p->buf,
				       .length = 4096,
				       .mw_access_flags = access };
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_wc wc;

	if (wr_api) {
		struct ibv_qp_ex *x = p->qpx[0];

		ibv_wr_start(x);
		x->wr_id = 77;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(x, mw, rkey, &bi);
		CHECK(ibv_wr_complete(x) == 0, "wr_complete");
	} else {
		struct ibv_send_wr wr = {
			.wr_id = 77, .opcode = IBV_WR_BIND_MW,
			.send_flags = IBV_SEND_SIGNALED,
			.bind_mw = { .mw = mw, .rkey = rkey, .bind_info = bi },
		}, *bad;

		CHECK(ibv_post_send(p->qp[0], &wr, &bad) == 0, "post bind");
	}
	CHECK(poll_one(p->cq[0], &wc, 5) && wc.wr_id == 77, "no bind completion");
	if (wc.status == IBV_WC_SUCCESS)
		mw->rkey = rkey;
	return wc.status;
}

static void
mw2_bind_ignores_local_bits(void)
{
	int api;

	for (api = 0; api < 2; api++) {
		struct pair p;
		struct ibv_mw *mw;

		pair_open_ex(&p, &rc, IBV_WC_STANDARD_FLAGS,
			     IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND);
		pair_connect(&p, &rc);
		mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
		CHECK(mw != NULL, "alloc_mw");
		CHECK(bind2(&p, mw, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_READ, api) == IBV_WC_SUCCESS,
		      "type 2 bind with LOCAL_WRITE (%s)",
		      api ? "ibv_wr_bind_mw" : "ibv_post_send");
		CHECK(ibv_dealloc_mw(mw) == 0, "dealloc");
		/* A bit that is no right at all is still an error. */
		mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
		CHECK(mw != NULL, "alloc_mw");
		CHECK(bind2(&p, mw, 1u << 20, api) == IBV_WC_MW_BIND_ERR,
		      "bind with an unknown bit");
		CHECK(ibv_dealloc_mw(mw) == 0, "dealloc");
		pair_close(&p);
	}
}

/* ibv_create_qp_ex: zero-valued fields of known bits are accepted. */
static void
create_qp_ex_comp_mask(void)
{
	static const enum ibv_qp_type types[] = {
		IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	struct pair p;
	uint32_t t;

	pair_open(&p, &rc);
	for (t = 0; t < DIM(types); t++) {
		struct ibv_qp_init_attr_ex ia = {
			.send_cq = p.cq[0], .recv_cq = p.cq[0],
			.qp_type = types[t],
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_XRCD |
				IBV_QP_INIT_ATTR_CREATE_FLAGS |
				IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
				IBV_QP_INIT_ATTR_IND_TABLE |
				IBV_QP_INIT_ATTR_RX_HASH,
			.pd = p.pd,
		};
		struct ibv_qp *qp = ibv_create_qp_ex(p.ctx, &ia);

		CHECK(qp != NULL, "type %d with zero fields: errno %d",
		      types[t], errno);
		CHECK(ibv_destroy_qp(qp) == 0, "destroy");
		ia.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
		errno = 0;
		CHECK(ibv_create_qp_ex(p.ctx, &ia) == NULL &&
		      errno == EOPNOTSUPP, "a create flag: errno %d", errno);
		ia.create_flags = 0;
		ia.max_tso_header = 64;
		errno = 0;
		CHECK(ibv_create_qp_ex(p.ctx, &ia) == NULL &&
		      errno == EOPNOTSUPP, "TSO: errno %d", errno);
		ia.max_tso_header = 0;
		ia.comp_mask |= 1u << 20;
		errno = 0;
		CHECK(ibv_create_qp_ex(p.ctx, &ia) == NULL && errno == EINVAL,
		      "unknown comp_mask bit: errno %d", errno);
	}
	pair_close(&p);
}

/*
 * ibv_resize_cq(3): completions owed for work already posted count as
 * held, produced or not. Sends to a peer that never answers stay owed.
 */
static void
resize_cq_counts_owed(void)
{
	struct pair_opts o = rc;
	struct ibv_sge sge;
	struct pair p;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int i;

	o.timeout = 20;			/* 4.3 s: still owed at the end */
	pair_open(&p, &o);
	cq = ibv_create_cq(p.ctx, 32, NULL, NULL, 0);
	CHECK(cq != NULL, "create_cq");
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(p.pd, &ia);
	CHECK(qp != NULL, "create_qp");
	qp_connect(qp, 0x99, &o, p.mtu, 0, 0);	/* nobody has QP 0x99 */
	sge = (struct ibv_sge){ (uintptr_t)p.buf, 64, p.mr->lkey };
	for (i = 0; i < 8; i++) {
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_SEND },
			*bad;

		CHECK(ibv_post_send(qp, &wr, &bad) == 0, "post");
		/* At once, before the engine may have looked. */
		if (i + 1 > 4)
			CHECK(ibv_resize_cq(cq, 4) == EINVAL,
			      "shrunk to 4 below %d owed sends", i + 1);
	}
	for (i = 0; i < 8; i++) {
		struct ibv_recv_wr rwr = { .wr_id = 100 + i, .sg_list = &sge,
					   .num_sge = 1 }, *bad;

		CHECK(ibv_post_recv(qp, &rwr, &bad) == 0, "post_recv");
	}
	CHECK(ibv_resize_cq(cq, 8) == EINVAL, "below 8 sends + 8 receives");
	CHECK(ibv_resize_cq(cq, 16) == 0, "room for all 16");
	CHECK(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
	pair_close(&p);
}

/* RoCE addresses by GID: an AV without a GRH is EINVAL, as on rxe. */
static void
av_without_grh_einval(void)
{
	struct ibv_ah_attr aa = { .port_num = 1 };
	struct ibv_qp_attr a;
	struct pair p;
	struct ibv_ah *ah;

	pair_open(&p, &rc);
	errno = 0;
	CHECK(ibv_create_ah(p.pd, &aa) == NULL && errno == EINVAL,
	      "ibv_create_ah without GRH: errno %d", errno);
	ah_self(p.ctx, &aa);
	ah = ibv_create_ah(p.pd, &aa);
	CHECK(ah != NULL, "ibv_create_ah with GRH: errno %d", errno);
	CHECK(ibv_destroy_ah(ah) == 0, "destroy_ah");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = rc.qp_access;
	CHECK(ibv_modify_qp(p.qp[0], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = p.qp[1]->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.port_num = 1;
	CHECK(ibv_modify_qp(p.qp[0], &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER) == EINVAL,
	      "RTR without GRH");
	ah_self(p.ctx, &a.ah_attr);
	CHECK(ibv_modify_qp(p.qp[0], &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER) == 0, "RTR with GRH");
	pair_close(&p);
}

/*
 * The conventions of rdma-core's libibverbs and rxe that programs lean on
 * beyond the verbs themselves (an audit against rdma-core 44):
 *  - the rate conversions (a missing symbol kills a program at load);
 *  - ibv_copy_path_rec_to_kern, the inverse of _from_kern;
 *  - a port query zeroes the caller's whole struct first (one built with
 *    newer headers is longer and reads its tail), and the 1.1 entry point
 *    fills the old 48-byte layout, flags included;
 *  - ibv_query_qp refreshes qp->state (the engine moved the QP to Error);
 *  - ibv_post_send leaves *bad_wr NULL when every WR went (rxe);
 *  - ibv_poll_cq of a negative count returns 0 (rxe, mlx5);
 *  - ibv_get_pkey_index compares the whole P_Key;
 *  - ibv_read_sysfs_file reads a file, SYSFS_PATH moves the sysfs root;
 *  - ibv_resolve_eth_l2_from_gid fails with negative values.
 */
static void
rdma_core_conventions(void)
{
	enum ibv_rate r;
	struct ibv_sa_path_rec pr, back;
	struct ib_user_path_rec kern;
	struct verbs_context *vctx;
	uint8_t big[sizeof(struct ibv_port_attr) + 16];
	struct ibv_port_attr full;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_ah_attr ah = { .port_num = 1 };
	struct ibv_wc wc;
	uint8_t mac[6];
	uint16_t vid;
	char path[64], buf[16];
	struct pair p;
	size_t i;
	FILE *f;

	/* Rates: each one's round trip, and the ones without a multiple. */
	for (r = IBV_RATE_2_5_GBPS; r <= IBV_RATE_1200_GBPS; r++) {
		CHECK(ibv_rate_to_mbps(r) > 0 &&
		      mbps_to_ibv_rate(ibv_rate_to_mbps(r)) == r,
		      "rate %d: %d Mbit/s", r, ibv_rate_to_mbps(r));
		if (ibv_rate_to_mult(r) > 0)
			CHECK(mult_to_ibv_rate(ibv_rate_to_mult(r)) == r,
			      "rate %d: multiple %d", r, ibv_rate_to_mult(r));
	}
	CHECK(ibv_rate_to_mult(IBV_RATE_10_GBPS) == 4 &&
	      ibv_rate_to_mult(IBV_RATE_14_GBPS) == -1 &&
	      mult_to_ibv_rate(3) == IBV_RATE_MAX &&
	      ibv_rate_to_mbps(IBV_RATE_100_GBPS) == 103125 &&
	      ibv_rate_to_mbps(IBV_RATE_MAX) == -1 &&
	      mbps_to_ibv_rate(99999) == IBV_RATE_MAX, "rate tables");

	/* A path record to the kernel's layout and back. */
	memset(&pr, 0, sizeof(pr));
	for (i = 0; i < 16; i++)
		pr.dgid.raw[i] = (uint8_t)i, pr.sgid.raw[i] = (uint8_t)(i + 16);
	pr.dlid = htobe16(7);
	pr.flow_label = htobe32(0x12345);
	pr.mtu = IBV_MTU_4096;
	pr.pkey = htobe16(0xffff);
	pr.hop_limit = 9;
	pr.traffic_class = 3;
	pr.rate = IBV_RATE_100_GBPS;
	pr.packet_life_time = 14;
	ibv_copy_path_rec_to_kern(&kern, &pr);
	CHECK(kern.dgid[15] == 15 && kern.sgid[0] == 16 && kern.mtu == 5 &&
	      kern.hop_limit == 9 && kern.rate == IBV_RATE_100_GBPS,
	      "path record to the kernel's layout");
	memset(&back, 0, sizeof(back));
	ibv_copy_path_rec_from_kern(&back, &kern);
	CHECK(memcmp(&back, &pr, sizeof(pr)) == 0, "path record round trip");

	pair_open(&p, &rc);

	/* Port queries. */
	vctx = verbs_get_ctx_op(p.ctx, query_port);
	CHECK(vctx != NULL, "query_port op");
	memset(&full, 0, sizeof(full));
	CHECK(ibv_query_port(p.ctx, 1, &full) == 0, "query_port");
	memset(big, 0xaa, sizeof(big));
	CHECK(vctx->query_port(p.ctx, 1, (struct ibv_port_attr *)big,
			       sizeof(big)) == 0, "query_port, longer struct");
	CHECK(memcmp(big, &full, sizeof(full)) == 0, "longer struct: fields");
	for (i = sizeof(full); i < sizeof(big); i++)
		CHECK(big[i] == 0, "longer struct: byte %zu is 0x%x, not 0", i,
		      big[i]);
	memset(big, 0xaa, sizeof(big));
	CHECK(vctx->query_port(p.ctx, 2, (struct ibv_port_attr *)big,
			       sizeof(big)) == EINVAL, "query_port 2: EINVAL");
	for (i = 0; i < sizeof(big); i++)
		CHECK(big[i] == 0, "query_port 2: byte %zu not zeroed", i);
	memset(big, 0xaa, sizeof(big));
	CHECK((ibv_query_port)(p.ctx, 1,
			       (struct _compat_ibv_port_attr *)big) == 0,
	      "ibv_query_port@IBVERBS_1.1");
	CHECK(memcmp(big, &full, offsetof(struct ibv_port_attr, flags) + 1) ==
	      0, "1.1 layout: every field through flags");
	for (i = 48; i < sizeof(big); i++)
		CHECK(big[i] == 0xaa, "1.1 layout: byte %zu past its 48 written",
		      i);

	/* *bad_wr: NULL after a post that took every WR. */
	pair_connect(&p, &rc);
	sge = (struct ibv_sge){ (uintptr_t)p.buf, 64, p.mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)p.buf + 4096;
	wr.wr.rdma.rkey = p.mr->rkey;
	bad = &wr;
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0 && bad == NULL,
	      "post_send: *bad_wr %p after success", (void *)bad);
	CHECK(poll_one(p.cq[0], &wc, 5) && wc.status == IBV_WC_SUCCESS,
	      "WRITE completes");
	CHECK(ibv_poll_cq(p.cq[0], -1, &wc) == 0, "poll_cq(-1) returns 0");

	/* The engine moves the QP to Error (a bad lkey); ibv_query_qp
	 * tells qp->state.
	 */
	sge.lkey = BOGUS_KEY;
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post, bad lkey");
	CHECK(poll_one(p.cq[0], &wc, 5) && wc.status == IBV_WC_LOC_PROT_ERR,
	      "bad lkey: LOC_PROT_ERR");
	CHECK(p.qp[0]->state == IBV_QPS_RTS, "qp->state before the query");
	CHECK(ibv_query_qp(p.qp[0], &qa, IBV_QP_STATE, &qi) == 0 &&
	      qa.qp_state == IBV_QPS_ERR && p.qp[0]->state == IBV_QPS_ERR,
	      "query_qp: state %d, qp->state %d", qa.qp_state,
	      p.qp[0]->state);

	/* P_Keys, the L2 of a GID. */
	CHECK(ibv_get_pkey_index(p.ctx, 1, htobe16(0xffff)) == 0 &&
	      ibv_get_pkey_index(p.ctx, 1, htobe16(0x7fff)) == -1,
	      "pkey index of 0xffff, of 0x7fff");
	CHECK(ibv_resolve_eth_l2_from_gid(p.ctx, &ah, mac, &vid) < 0,
	      "resolve_eth_l2 without GRH: negative");
	ah_self(p.ctx, &ah);
	CHECK(ibv_resolve_eth_l2_from_gid(p.ctx, &ah, mac, &vid) == 0,
	      "resolve_eth_l2 of its own GID");
	ah.grh.dgid.raw[15] ^= 0x5a;
	CHECK(ibv_resolve_eth_l2_from_gid(p.ctx, &ah, mac, &vid) < 0,
	      "resolve_eth_l2 of another GID: negative");
	pair_close(&p);

	/* sysfs: a file read through ibv_read_sysfs_file. */
	snprintf(path, sizeof(path), "/tmp/dpib-compat-%d", getpid());
	f = fopen(path, "w");
	CHECK(f != NULL, "temp file");
	fputs("abc\n", f);
	fclose(f);
	CHECK(ibv_read_sysfs_file("/tmp", path + 5, buf, sizeof(buf)) == 3 &&
	      strcmp(buf, "abc") == 0, "read_sysfs_file: '%s'", buf);
	CHECK(ibv_read_sysfs_file("/tmp", path + 5, buf, 3) == -1,
	      "read_sysfs_file into 3 bytes: not cut short");
	unlink(path);
	errno = 0;
	CHECK(ibv_read_sysfs_file("/tmp", path + 5, buf, sizeof(buf)) == -1 &&
	      errno == ENOENT, "read_sysfs_file, no file: errno %d", errno);
}

int
main(void)
{
	/* Before anything asks for it: the root is read once. */
	setenv("SYSFS_PATH", "/tmp/dpib-sysfs//", 1);
	CHECK(strcmp(ibv_get_sysfs_path(), "/tmp/dpib-sysfs") == 0,
	      "SYSFS_PATH: %s", ibv_get_sysfs_path());
	unsetenv("SYSFS_PATH");
	RUN(rdma_core_conventions);
	RUN(zero_length_classic);
	RUN(zero_length_checks_qp_access);
	RUN(zero_length_wr_api);
	RUN(zero_length_ud);
	RUN(rd_atomic_128);
	RUN(mw2_bind_ignores_local_bits);
	RUN(create_qp_ex_comp_mask);
	RUN(resize_cq_counts_owed);
	RUN(av_without_grh_einval);
	CHECK_DONE();
}
