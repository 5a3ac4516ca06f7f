/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Memory windows, invalidation and IBA 1.5 ATOMIC WRITE on the loopback
 * device (man ibv_alloc_mw, ibv_bind_mw, ibv_post_send, ibv_wr_post):
 * type 1 windows bound with ibv_bind_mw, type 2 windows bound through the
 * send queue (classic post and ibv_wr_*), every remote access checked
 * against the window's key, bounds, rights and QP, invalidation by
 * LOCAL_INV, SEND with Invalidate and ibv_dealloc_mw, and ATOMIC WRITE with
 * its alignment, access and length rules.
 *
 * qp[1] owns the memory: windows are bound on it, and qp[0] reaches them
 * with RDMA. A remote access error puts both QPs in Error; pair_restart
 * takes them through Reset back to RTS.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "verbs_util.h"

#define BUF_LEN		(1u << 20)
#define SRC		0		/* qp[0]'s data */
#define DST		(BUF_LEN / 2)	/* what windows cover */
#define WIN_LEN		8192

#define MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
#define QP_ACCESS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	IBV_ACCESS_REMOTE_ATOMIC)
#define SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE | \
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_BIND_MW | \
	IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV | \
	IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static const struct pair_opts OPTS = {
	.buflen = BUF_LEN,
	.mr_access = MR_ACCESS,
	.qp_access = QP_ACCESS,
	.max_wr = 64,
	.max_sge = 4,
	.max_inline = 64,
	.max_rd_atomic = 16,
	.min_rnr_timer = 1,
	.rnr_retry = 7,
	.timeout = 14,
	.retry_cnt = 7,
};

static struct pair p;

static uint8_t *
at(uint64_t off)
{
	return p.buf + off;
}

static uint64_t
va(uint64_t off)
{
	return (uintptr_t)p.buf + off;
}

/* The next completion of @cq, which must come within 5 s. */
static struct ibv_wc
next_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	CHECK(poll_one(cq, &wc, 5.0), "no completion within 5 s");
	return wc;
}

static void
expect_wc(struct ibv_cq *cq, enum ibv_wc_status status,
	  enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc = next_wc(cq);

	CHECK(wc.status == status, "status %s (%d), want %s",
	      ibv_wc_status_str(wc.status), wc.status,
	      ibv_wc_status_str(status));
	if (status == IBV_WC_SUCCESS)
		CHECK(wc.opcode == opcode, "opcode %d, want %d", wc.opcode,
		      opcode);
}

static void
drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];

	while (ibv_poll_cq(cq, 16, wc) > 0)
		;
}

/* After an error: both QPs through Reset (which drops their CQEs) to RTS. */
static void
pair_restart(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int i;

	for (i = 0; i < 2; i++)
		CHECK(ibv_modify_qp(p.qp[i], &a, IBV_QP_STATE) == 0, "to RESET");
	pair_connect(&p, &OPTS);
	drain(p.cq[0]);
	drain(p.cq[1]);
}

static int
qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0, "query_qp");
	return a.qp_state;
}

/* One signaled RDMA/atomic WR from qp[0]'s SRC to the peer's @raddr. */
static int
post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t len,
	  uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = va(SRC), .length = len,
			       .lkey = p.mr->lkey };
	struct ibv_send_wr wr = {
		/* A length-0 SGE would mean 2^31 bytes: no SGE at all. */
		.wr_id = op, .sg_list = &sge, .num_sge = len != 0, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

/* qp[0] RDMA-writes @len bytes of a fresh pattern; the WC status. */
static enum ibv_wc_status
remote_write(uint64_t raddr, uint32_t len, uint32_t rkey, uint32_t seed)
{
	struct ibv_wc wc;

	fill_pattern(at(SRC), len, seed);
	CHECK(post_rdma(p.qp[0], IBV_WR_RDMA_WRITE, len, raddr, rkey) == 0,
	      "post WRITE");
	wc = next_wc(p.cq[0]);
	return wc.status;
}

static enum ibv_wc_status
remote_read(uint64_t raddr, uint32_t len, uint32_t rkey)
{
	struct ibv_wc wc;

	memset(at(SRC), 0, len);
	CHECK(post_rdma(p.qp[0], IBV_WR_RDMA_READ, len, raddr, rkey) == 0,
	      "post READ");
	wc = next_wc(p.cq[0]);
	return wc.status;
}

/* A remote access that must fail: REM_ACCESS_ERR, both QPs to Error. */
static void
expect_rejected(enum ibv_wc_status st, const char *what)
{
	CHECK(st == IBV_WC_REM_ACCESS_ERR, "%s: %s, want REM_ACCESS_ERR", what,
	      ibv_wc_status_str(st));
	CHECK(qp_state(p.qp[0]) == IBV_QPS_ERR, "%s: requester not in Error",
	      what);
	pair_restart();
}

/* The completion of the bind @wr_id on qp[1]: its status. */
static enum ibv_wc_status
bind_status(uint64_t wr_id)
{
	struct ibv_wc wc = next_wc(p.cq[1]);

	CHECK(wc.wr_id == wr_id, "wr_id %" PRIu64 ", want %" PRIu64, wc.wr_id,
	      wr_id);
	if (wc.status == IBV_WC_SUCCESS)
		CHECK(wc.opcode == IBV_WC_BIND_MW, "opcode %d", wc.opcode);
	return wc.status;
}

/* Bind type 1 window @mw on qp[1] with ibv_bind_mw; the WC status. */
static enum ibv_wc_status
bind1(struct ibv_mw *mw, struct ibv_mr *mr, uint64_t addr, uint64_t len,
      unsigned int access)
{
	struct ibv_mw_bind b = {
		.wr_id = 77, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = addr, .length = len,
			       .mw_access_flags = access },
	};
	uint32_t old = mw->rkey;
	int ret = ibv_bind_mw(p.qp[1], mw, &b);

	CHECK(ret == 0, "ibv_bind_mw: %d", ret);
	/* ibv_bind_mw(3): the new rkey is in mw->rkey, a new tag. */
	CHECK(mw->rkey == ibv_inc_rkey(old), "rkey %#x after %#x", mw->rkey,
	      old);
	return bind_status(77);
}

/* Bind type 2 window @mw on qp[1] through ibv_post_send; the WC status. */
static enum ibv_wc_status
bind2(struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr, uint64_t addr,
      uint64_t len, unsigned int access)
{
	struct ibv_send_wr wr = {
		.wr_id = 78, .opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_mw = { .mw = mw, .rkey = rkey,
			     .bind_info = { .mr = mr, .addr = addr,
					    .length = len,
					    .mw_access_flags = access } },
	}, *bad;
	int ret = ibv_post_send(p.qp[1], &wr, &bad);

	CHECK(ret == 0, "post BIND_MW: %d", ret);
	CHECK(mw->rkey == rkey, "mw->rkey %#x after posting %#x", mw->rkey,
	      rkey);
	return bind_status(78);
}

/* qp[1] invalidates @rkey with LOCAL_INV; the WC status. */
static enum ibv_wc_status
local_inv(uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = 79, .opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey,
	}, *bad;
	struct ibv_wc wc;

	CHECK(ibv_post_send(p.qp[1], &wr, &bad) == 0, "post LOCAL_INV");
	wc = next_wc(p.cq[1]);
	if (wc.status == IBV_WC_SUCCESS)
		CHECK(wc.opcode == IBV_WC_LOCAL_INV, "opcode %d", wc.opcode);
	return wc.status;
}

/* A bind that fails: MW_BIND_ERR, qp[1] in Error, nothing bound. */
static void
expect_bind_error(enum ibv_wc_status st, const char *what)
{
	CHECK(st == IBV_WC_MW_BIND_ERR, "%s: %s, want MW_BIND_ERR", what,
	      ibv_wc_status_str(st));
	CHECK(qp_state(p.qp[1]) == IBV_QPS_ERR, "%s: QP not in Error", what);
	pair_restart();
}

static void
check_pattern(uint64_t off, uint32_t len, uint32_t seed)
{
	uint8_t *want = malloc(len);

	CHECK(want != NULL, "malloc");
	fill_pattern(want, len, seed);
	CHECK(memcmp(at(off), want, len) == 0, "bytes at %#" PRIx64 " differ",
	      off);
	free(want);
}

static void
device_caps(void)
{
	struct ibv_device_attr a;

	CHECK(ibv_query_device(p.ctx, &a) == 0, "query_device");
	CHECK(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW, "MEM_WINDOW cap");
	CHECK(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B,
	      "MEM_WINDOW_TYPE_2B cap");
	CHECK(a.max_mw > 0, "max_mw %d", a.max_mw);
}

static void
alloc_mw_types(void)
{
	struct ibv_mw *m1 = ibv_alloc_mw(p.pd, IBV_MW_TYPE_1);
	struct ibv_mw *m2 = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	static const int bad[] = { 0, 3, 0x7f, -1 };
	unsigned int i;

	CHECK(m1 != NULL && m1->type == IBV_MW_TYPE_1 && m1->pd == p.pd,
	      "type 1: errno %d", errno);
	CHECK(m2 != NULL && m2->type == IBV_MW_TYPE_2 && m2->pd == p.pd,
	      "type 2: errno %d", errno);
	CHECK(m1->rkey != m2->rkey && m1->rkey != p.mr->rkey,
	      "keys %#x %#x %#x", m1->rkey, m2->rkey, p.mr->rkey);
	for (i = 0; i < DIM(bad); i++) {
		errno = 0;
		CHECK(ibv_alloc_mw(p.pd, (enum ibv_mw_type)bad[i]) == NULL &&
		      errno == EINVAL, "type %d: errno %d", bad[i], errno);
	}
	/* An unbound window grants nothing. */
	expect_rejected(remote_write(va(DST), 8, m1->rkey, 1), "unbound MW");
	CHECK(ibv_dealloc_mw(m1) == 0 && ibv_dealloc_mw(m2) == 0, "dealloc");
}

/* Type 1: bind, RDMA through it, rebind, zero-length bind. */
static void
mw1_bind_access(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_1);
	uint64_t base = va(DST + 4096);
	uint32_t k1, k2;

	CHECK(mw != NULL, "alloc");
	CHECK(bind1(mw, p.mr, base, WIN_LEN, IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS, "bind");
	k1 = mw->rkey;
	CHECK(remote_write(base, WIN_LEN, k1, 11) == IBV_WC_SUCCESS, "write");
	check_pattern(DST + 4096, WIN_LEN, 11);
	CHECK(remote_read(base + 100, 1000, k1) == IBV_WC_SUCCESS, "read");
	CHECK(memcmp(at(SRC), at(DST + 4096 + 100), 1000) == 0, "read bytes");
	/* A zero-length access needs no key check (IBA 9.4.3). */
	CHECK(remote_write(base, 0, k1, 1) == IBV_WC_SUCCESS, "0 bytes");

	/* Bounds: one byte before, one byte past, an overflowing length. */
	memset(at(DST), 0xee, 4096);
	expect_rejected(remote_write(base - 1, 2, k1, 2), "before window");
	CHECK(at(DST + 4095)[0] == 0xee, "byte before the window written");
	expect_rejected(remote_write(base + WIN_LEN - 4, 8, k1, 3),
			"past window");
	expect_rejected(remote_read(base + WIN_LEN, 1, k1), "read past");
	/* Rights: the window's, not the MR's (which allows atomics). */
	CHECK(post_rdma(p.qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, 8, base, k1) == 0,
	      "post FETCH_ADD");
	expect_rejected(next_wc(p.cq[0]).status, "atomic without the right");
	/* The MR's own rkey still works beside the window. */
	CHECK(remote_write(va(DST), 16, p.mr->rkey, 4) == IBV_WC_SUCCESS,
	      "MR rkey");

	/* Rebinding moves the window and changes the key: the old key is
	 * stale (only its tag differs) and refused.
	 */
	CHECK(bind1(mw, p.mr, va(DST), 4096, IBV_ACCESS_REMOTE_READ) ==
	      IBV_WC_SUCCESS, "rebind");
	k2 = mw->rkey;
	CHECK(k2 != k1 && (k2 >> 8) == (k1 >> 8), "keys %#x %#x", k1, k2);
	expect_rejected(remote_write(base, 8, k1, 5), "stale rkey");
	expect_rejected(remote_write(va(DST), 8, k2, 6), "read-only window");
	CHECK(remote_read(va(DST), 4096, k2) == IBV_WC_SUCCESS, "read new");

	/* A zero-length bind (no MR) invalidates a type 1 window. */
	CHECK(bind1(mw, NULL, 0, 0, 0) == IBV_WC_SUCCESS, "zero-length bind");
	expect_rejected(remote_read(va(DST), 8, mw->rkey), "unbound by 0 bind");
	expect_rejected(remote_read(va(DST), 8, k2), "old key after unbind");
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc");
}

/* A window whose addresses start at 0 (IBV_ACCESS_ZERO_BASED). */
static void
mw1_zero_based(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_1);

	CHECK(mw != NULL, "alloc");
	CHECK(bind1(mw, p.mr, va(DST + 8192), 4096, IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_ZERO_BASED) == IBV_WC_SUCCESS, "bind");
	CHECK(remote_write(100, 200, mw->rkey, 7) == IBV_WC_SUCCESS, "write");
	check_pattern(DST + 8192 + 100, 200, 7);
	expect_rejected(remote_write(4000, 200, mw->rkey, 8), "past the end");
	/* The virtual address is not an offset into a zero-based window. */
	expect_rejected(remote_write(va(DST + 8192), 8, mw->rkey, 9),
			"virtual address");
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc");
}

/* Binds the verbs or the engine must refuse. */
static void
mw1_bind_rules(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	struct ibv_pd *pd2 = ibv_alloc_pd(p.ctx);
	struct ibv_mr *nobind, *ro, *other;
	struct ibv_mw_bind b = { .send_flags = IBV_SEND_SIGNALED };
	uint32_t key;

	CHECK(mw != NULL && mw2 != NULL && pd2 != NULL, "alloc");
	nobind = ibv_reg_mr(p.pd, at(DST), 4096, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE);
	ro = ibv_reg_mr(p.pd, at(DST), 4096, IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_MW_BIND);
	other = ibv_reg_mr(pd2, at(DST), 4096, MR_ACCESS);
	CHECK(nobind && ro && other, "reg_mr errno %d", errno);

	/* Checked by the verbs before anything is posted. */
	b.bind_info.mr = p.mr;
	b.bind_info.addr = va(DST);
	b.bind_info.length = 64;
	CHECK(ibv_bind_mw(p.qp[1], mw2, &b) == EINVAL, "type 2 by ibv_bind_mw");
	b.bind_info.mr = other;
	CHECK(ibv_bind_mw(p.qp[1], mw, &b) == EPERM, "MR of another PD");
	b.bind_info.mr = NULL;
	CHECK(ibv_bind_mw(p.qp[1], mw, &b) == EINVAL, "length without MR");

	/* Checked when the bind executes: MW_BIND_ERR, nothing bound. */
	key = mw->rkey;
	expect_bind_error(bind1(mw, nobind, va(DST), 64,
				IBV_ACCESS_REMOTE_READ), "MR without MW_BIND");
	expect_rejected(remote_read(va(DST), 8, ibv_inc_rkey(key)),
			"failed bind left a window");
	expect_bind_error(bind1(mw, ro, va(DST), 64, IBV_ACCESS_REMOTE_WRITE),
			  "remote write on an MR without local write");
	expect_bind_error(bind1(mw, ro, va(DST), 64, IBV_ACCESS_REMOTE_ATOMIC),
			  "remote atomic on an MR without local write");
	expect_bind_error(bind1(mw, p.mr, va(BUF_LEN - 64), 128,
				IBV_ACCESS_REMOTE_READ), "past the MR");
	expect_bind_error(bind1(mw, p.mr, va(0) - 1, 16,
				IBV_ACCESS_REMOTE_READ), "before the MR");
	expect_bind_error(bind1(mw, p.mr, va(DST), 64, 1u << 20),
			  "a bit that is no access right");
	/* Issue 15: local bits mean nothing for a window and are ignored,
	 * as rxe and mlx5 do: the bind succeeds, and only the remote
	 * rights asked for are granted.
	 */
	CHECK(bind1(mw, p.mr, va(DST), 64, IBV_ACCESS_LOCAL_WRITE |
		    IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
	      "bind with LOCAL_WRITE beside REMOTE_READ");
	CHECK(remote_read(va(DST), 64, mw->rkey) == IBV_WC_SUCCESS,
	      "read through it");
	CHECK(bind1(mw, p.mr, va(DST), 64, IBV_ACCESS_LOCAL_WRITE) ==
	      IBV_WC_SUCCESS, "bind with LOCAL_WRITE only");
	expect_rejected(remote_read(va(DST), 8, mw->rkey),
			"a window with local bits only grants nothing");
	/* A read-only MR still backs a read window. */
	CHECK(bind1(mw, ro, va(DST), 64, IBV_ACCESS_REMOTE_READ) ==
	      IBV_WC_SUCCESS, "read window on a read-only MR");
	CHECK(remote_read(va(DST), 64, mw->rkey) == IBV_WC_SUCCESS, "read");

	/* ibv_dereg_mr(3): not while a window is bound to the MR; nor can
	 * it be re-registered.
	 */
	CHECK(ibv_dereg_mr(ro) == EBUSY, "dereg with a bound window");
	errno = 0;
	CHECK(ibv_rereg_mr(ro, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_REMOTE_READ) == IBV_REREG_MR_ERR_CMD &&
	      errno == EBUSY, "rereg with a bound window: errno %d", errno);
	CHECK(remote_read(va(DST), 64, mw->rkey) == IBV_WC_SUCCESS,
	      "window works after the refused dereg");
	CHECK(bind1(mw, NULL, 0, 0, 0) == IBV_WC_SUCCESS, "unbind");
	CHECK(ibv_dereg_mr(ro) == 0, "dereg once unbound");
	CHECK(ibv_dereg_mr(nobind) == 0 && ibv_dereg_mr(other) == 0, "dereg");
	CHECK(ibv_dealloc_mw(mw) == 0 && ibv_dealloc_mw(mw2) == 0, "dealloc");
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc pd2");
}

/* A second connected pair in the same PD: a QP the window is not bound to. */
static void
other_pair(struct ibv_qp *q[2], struct ibv_cq **cq)
{
	int i;

	*cq = ibv_create_cq(p.ctx, 64, NULL, NULL, 0);
	CHECK(*cq != NULL, "create_cq");
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = *cq, .recv_cq = *cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		q[i] = ibv_create_qp(p.pd, &ia);
		CHECK(q[i] != NULL, "create_qp");
	}
	qp_connect(q[0], q[1]->qp_num, &OPTS, p.mtu, 100, 200);
	qp_connect(q[1], q[0]->qp_num, &OPTS, p.mtu, 200, 100);
}

/* Type 2 through the classic post: one QP, LOCAL_INV, the bind rules. */
static void
mw2_bind_post_send(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	struct ibv_mw *mw1 = ibv_alloc_mw(p.pd, IBV_MW_TYPE_1);
	struct ibv_qp *q[2];
	struct ibv_cq *cq;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge = { .addr = va(SRC), .length = 8,
			       .lkey = p.mr->lkey };
	uint32_t k;

	CHECK(mw != NULL && mw1 != NULL, "alloc");
	k = ibv_inc_rkey(mw->rkey);
	CHECK(bind2(mw, k, p.mr, va(DST), WIN_LEN, IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC) ==
	      IBV_WC_SUCCESS, "bind");
	CHECK(remote_write(va(DST), WIN_LEN, k, 21) == IBV_WC_SUCCESS, "write");
	check_pattern(DST, WIN_LEN, 21);
	*(uint64_t *)at(DST + 64) = 41;
	CHECK(post_rdma(p.qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, 8, va(DST + 64),
			k) == 0, "post FETCH_ADD");
	expect_wc(p.cq[0], IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	CHECK(*(uint64_t *)at(DST + 64) == 42 && *(uint64_t *)at(SRC) == 41,
	      "fetch-add through the window");

	/* Bound to qp[1]: a request arriving on another QP is refused. */
	other_pair(q, &cq);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = va(DST);
	wr.wr.rdma.rkey = k;
	CHECK(ibv_post_send(q[0], &wr, &bad) == 0, "post on the other QP");
	expect_wc(cq, IBV_WC_REM_ACCESS_ERR, 0);
	CHECK(ibv_destroy_qp(q[0]) == 0 && ibv_destroy_qp(q[1]) == 0 &&
	      ibv_destroy_cq(cq) == 0, "destroy other pair");

	/* A bound type 2 window cannot be bound again before invalidation. */
	expect_bind_error(bind2(mw, ibv_inc_rkey(k), p.mr, va(DST), 64,
				IBV_ACCESS_REMOTE_READ), "bind a bound window");
	CHECK(remote_write(va(DST), 8, k, 22) == IBV_WC_SUCCESS,
	      "the window kept its binding");

	/* LOCAL_INV: the window stops answering. */
	CHECK(local_inv(k) == IBV_WC_SUCCESS, "LOCAL_INV");
	expect_rejected(remote_write(va(DST), 8, k, 23), "after LOCAL_INV");
	/* Invalidating what is not a valid type 2 window fails. */
	CHECK(local_inv(k) == IBV_WC_LOC_QP_OP_ERR, "second LOCAL_INV");
	pair_restart();
	CHECK(local_inv(p.mr->rkey) == IBV_WC_LOC_QP_OP_ERR, "LOCAL_INV of MR");
	pair_restart();
	CHECK(bind1(mw1, p.mr, va(DST), 64, IBV_ACCESS_REMOTE_READ) ==
	      IBV_WC_SUCCESS, "bind type 1");
	CHECK(local_inv(mw1->rkey) == IBV_WC_LOC_QP_OP_ERR,
	      "LOCAL_INV of a type 1 window");
	pair_restart();
	CHECK(remote_read(va(DST), 8, mw1->rkey) == IBV_WC_SUCCESS,
	      "type 1 window still bound");

	/* The new rkey must keep the window's index; its tag is the
	 * caller's choice. A type 1 window is not bound through the SQ.
	 */
	expect_bind_error(bind2(mw, k + 0x100, p.mr, va(DST), 64,
				IBV_ACCESS_REMOTE_READ), "rkey of another index");
	mw->rkey = k;
	expect_bind_error(bind2(mw, k, p.mr, va(DST), 64, 0x1000),
			  "unknown access bit");
	mw->rkey = k;
	expect_bind_error(bind2(mw, ibv_inc_rkey(k), NULL, 0, 0, 0),
			  "type 2 without an MR");
	/* The tag must change: the key of the last binding would let its
	 * holders in again.
	 */
	expect_bind_error(bind2(mw, k, p.mr, va(DST), 64,
				IBV_ACCESS_REMOTE_READ), "the same rkey again");
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = mw1;
	wr.bind_mw.rkey = ibv_inc_rkey(mw1->rkey);
	wr.bind_mw.bind_info.mr = p.mr;
	wr.bind_mw.bind_info.length = 8;
	wr.bind_mw.bind_info.addr = va(DST);
	CHECK(ibv_post_send(p.qp[1], &wr, &bad) == EINVAL && bad == &wr,
	      "type 1 through the SQ");
	wr.bind_mw.mw = NULL;
	CHECK(ibv_post_send(p.qp[1], &wr, &bad) == EINVAL, "no MW");

	/* Bound again (a free window) with a tag of the caller's choice. */
	k = (mw->rkey & ~0xffu) | 0x5a;
	CHECK(bind2(mw, k, p.mr, va(DST), 64, IBV_ACCESS_REMOTE_READ) ==
	      IBV_WC_SUCCESS, "bind after invalidation");
	CHECK(remote_read(va(DST), 64, k) == IBV_WC_SUCCESS, "read");
	/* ibv_dealloc_mw invalidates. */
	CHECK(ibv_dealloc_mw(mw) == 0 && ibv_dealloc_mw(mw1) == 0, "dealloc");
	expect_rejected(remote_read(va(DST), 8, k), "after dealloc");
}

/*
 * Destroying the QP a type 2 window is bound to invalidates the window: it
 * is free to bind again and no longer holds its MR.
 */
static void
mw2_qp_destroy_invalidates(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	struct ibv_mr *mr = ibv_reg_mr(p.pd, at(DST), 4096, MR_ACCESS);
	struct ibv_qp *q[2];
	struct ibv_cq *cq;
	struct ibv_send_wr wr = {
		.wr_id = 1, .opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	uint32_t k;

	CHECK(mw != NULL && mr != NULL, "alloc");
	other_pair(q, &cq);
	k = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = k;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr,
		.addr = va(DST), .length = 4096,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ };
	CHECK(ibv_post_send(q[1], &wr, &bad) == 0, "post bind");
	wc = next_wc(cq);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
	      "bind on q[1]: %s", ibv_wc_status_str(wc.status));
	CHECK(ibv_dereg_mr(mr) == EBUSY, "MR held by the window");
	CHECK(ibv_destroy_qp(q[1]) == 0, "destroy the window's QP");
	CHECK(ibv_dereg_mr(mr) == 0, "MR released with the QP");
	CHECK(local_inv(k) == IBV_WC_LOC_QP_OP_ERR, "window already invalid");
	pair_restart();
	CHECK(bind2(mw, ibv_inc_rkey(k), p.mr, va(DST), 64,
		    IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS, "free again");
	CHECK(ibv_destroy_qp(q[0]) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc");
}

/*
 * The windows a QP's destruction must invalidate are counted per QP (it
 * reads the key table only when some are bound to it): two bound to q[1],
 * one invalidated by another QP's LOCAL_INV, and the other still goes with
 * q[1]; the first, bound again to another QP, stays.
 */
static void
mw2_qp_destroy_counts(void)
{
	struct ibv_mw *mw[2] = { ibv_alloc_mw(p.pd, IBV_MW_TYPE_2),
				 ibv_alloc_mw(p.pd, IBV_MW_TYPE_2) };
	struct ibv_mr *mr = ibv_reg_mr(p.pd, at(DST), 4096, MR_ACCESS);
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_qp *q[2];
	struct ibv_cq *cq;
	struct ibv_wc wc;
	uint32_t k[2], again;
	int i;

	CHECK(mw[0] != NULL && mw[1] != NULL && mr != NULL, "alloc");
	other_pair(q, &cq);
	for (i = 0; i < 2; i++) {
		k[i] = ibv_inc_rkey(mw[i]->rkey);
		wr.wr_id = 10 + i;
		wr.bind_mw.mw = mw[i];
		wr.bind_mw.rkey = k[i];
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr,
			.addr = va(DST), .length = 4096,
			.mw_access_flags = IBV_ACCESS_REMOTE_READ };
		CHECK(ibv_post_send(q[1], &wr, &bad) == 0, "post bind %d", i);
		wc = next_wc(cq);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 10u + i,
		      "bind %d on q[1]: %s", i, ibv_wc_status_str(wc.status));
	}
	CHECK(local_inv(k[0]) == IBV_WC_SUCCESS, "LOCAL_INV from another QP");
	again = ibv_inc_rkey(k[0]);
	CHECK(bind2(mw[0], again, p.mr, va(DST), 64, IBV_ACCESS_REMOTE_READ) ==
	      IBV_WC_SUCCESS, "bound again, to qp[1]");
	CHECK(ibv_destroy_qp(q[1]) == 0, "destroy q[1]");
	CHECK(ibv_dereg_mr(mr) == 0, "MR released: the second window went");
	CHECK(local_inv(k[1]) == IBV_WC_LOC_QP_OP_ERR, "second window invalid");
	pair_restart();
	CHECK(remote_read(va(DST), 8, again) == IBV_WC_SUCCESS,
	      "the first window, bound to qp[1], still answers");
	CHECK(ibv_destroy_qp(q[0]) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
	CHECK(ibv_dealloc_mw(mw[0]) == 0 && ibv_dealloc_mw(mw[1]) == 0,
	      "dealloc");
}

/* SEND with Invalidate: the receiver's window goes, the WC says which. */
static void
send_with_inv(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	struct ibv_sge rs = { .addr = va(DST + 65536), .length = 4096,
			      .lkey = p.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 5, .sg_list = &rs, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	struct ibv_sge ss = { .addr = va(SRC), .length = 3000,
			      .lkey = p.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 6, .sg_list = &ss, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_INV,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	uint32_t k;

	CHECK(mw != NULL, "alloc");
	k = ibv_inc_rkey(mw->rkey);
	CHECK(bind2(mw, k, p.mr, va(DST), 4096, IBV_ACCESS_REMOTE_WRITE) ==
	      IBV_WC_SUCCESS, "bind");
	CHECK(remote_write(va(DST), 64, k, 31) == IBV_WC_SUCCESS, "write");

	/* Several packets at 1024 bytes of path MTU or one at 4096: the
	 * IETH rides on the last.
	 */
	fill_pattern(at(SRC), 3000, 32);
	CHECK(ibv_post_recv(p.qp[1], &rwr, &rbad) == 0, "post_recv");
	wr.invalidate_rkey = k;
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post SEND_WITH_INV");
	expect_wc(p.cq[0], IBV_WC_SUCCESS, IBV_WC_SEND);
	wc = next_wc(p.cq[1]);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
	      wc.wr_id == 5 && wc.byte_len == 3000, "recv: %s op %d len %u",
	      ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len);
	CHECK((wc.wc_flags & IBV_WC_WITH_INV) &&
	      !(wc.wc_flags & IBV_WC_WITH_IMM) && wc.invalidated_rkey == k,
	      "flags %#x invalidated %#x, want %#x", wc.wc_flags,
	      wc.invalidated_rkey, k);
	check_pattern(DST + 65536, 3000, 32);
	expect_rejected(remote_write(va(DST), 8, k, 33), "after SEND_WITH_INV");

	/* Naming a key that is no valid window of the receiver's QP: the
	 * data lands, the receive and the SEND both fail (class J).
	 */
	CHECK(ibv_post_recv(p.qp[1], &rwr, &rbad) == 0, "post_recv");
	wr.invalidate_rkey = k;		/* invalid already */
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
	expect_wc(p.cq[0], IBV_WC_REM_INV_REQ_ERR, 0);
	wc = next_wc(p.cq[1]);
	CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR && wc.wr_id == 5,
	      "receiver: %s", ibv_wc_status_str(wc.status));
	pair_restart();
	CHECK(ibv_post_recv(p.qp[1], &rwr, &rbad) == 0, "post_recv");
	wr.invalidate_rkey = p.mr->rkey;	/* an MR: never invalidated */
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
	expect_wc(p.cq[0], IBV_WC_REM_INV_REQ_ERR, 0);
	pair_restart();
	CHECK(remote_write(va(DST), 8, p.mr->rkey, 34) == IBV_WC_SUCCESS,
	      "the MR survived");
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc");
}

/* SEND_WITH_INV and ATOMIC WRITE have no UC form; bind and LOCAL_INV do. */
static void
uc_opcode_rules(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = p.cq[0], .recv_cq = p.cq[0], .qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_init_attr_ex iax = {
		.send_cq = p.cq[0], .recv_cq = p.cq[0], .qp_type = IBV_QPT_UC,
		.cap = ia.cap, .pd = p.pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	};
	struct ibv_sge sge = { .addr = va(SRC), .length = 8,
			       .lkey = p.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_qp *uc = ibv_create_qp(p.pd, &ia), *x;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	CHECK(uc != NULL, "create UC");
	CHECK(ibv_modify_qp(uc, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "INIT");
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = p.mtu;
	a.dest_qp_num = uc->qp_num;
	ah_self(uc->context, &a.ah_attr);
	CHECK(ibv_modify_qp(uc, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN) == 0, "RTR");
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(uc, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0, "RTS");
	wr.opcode = IBV_WR_SEND_WITH_INV;
	CHECK(ibv_post_send(uc, &wr, &bad) == EINVAL, "UC SEND_WITH_INV");
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	CHECK(ibv_post_send(uc, &wr, &bad) == EINVAL, "UC ATOMIC_WRITE");
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = p.mr->rkey;
	CHECK(ibv_post_send(uc, &wr, &bad) == 0, "UC LOCAL_INV is postable");
	expect_wc(p.cq[0], IBV_WC_LOC_QP_OP_ERR, 0);
	CHECK(ibv_destroy_qp(uc) == 0, "destroy");

	iax.send_ops_flags = IBV_QP_EX_WITH_SEND_WITH_INV;
	errno = 0;
	CHECK(ibv_create_qp_ex(p.ctx, &iax) == NULL && errno == EOPNOTSUPP,
	      "UC qp_ex with SEND_WITH_INV: errno %d", errno);
	iax.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE;
	CHECK(ibv_create_qp_ex(p.ctx, &iax) == NULL && errno == EOPNOTSUPP,
	      "UC qp_ex with ATOMIC_WRITE");
	iax.send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
	x = ibv_create_qp_ex(p.ctx, &iax);
	CHECK(x != NULL, "UC qp_ex with BIND_MW and LOCAL_INV: errno %d",
	      errno);
	CHECK(ibv_destroy_qp(x) == 0, "destroy");
	drain(p.cq[0]);
}

/* ATOMIC WRITE through the classic post. */
static void
atomic_write_classic(void)
{
	const uint64_t v = 0x0123456789abcdefull;
	struct ibv_sge sge = { .addr = va(SRC), .length = 8,
			       .lkey = p.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 9, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_WRITE, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_qp_attr a;
	struct ibv_wc wc;

	memcpy(at(SRC), &v, 8);
	memset(at(DST), 0x5c, 32);
	wr.wr.rdma.remote_addr = va(DST + 8);
	wr.wr.rdma.rkey = p.mr->rkey;
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
	wc = next_wc(p.cq[0]);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_ATOMIC_WRITE &&
	      wc.wr_id == 9, "WC %s opcode %d", ibv_wc_status_str(wc.status),
	      wc.opcode);
	CHECK(memcmp(at(DST + 8), &v, 8) == 0, "value not written");
	CHECK(at(DST + 7)[0] == 0x5c && at(DST + 16)[0] == 0x5c,
	      "bytes around the target written");

	/* Inline: the 8 bytes are taken at post time. */
	wr.send_flags |= IBV_SEND_INLINE;
	memset(at(SRC), 0xa5, 8);
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post inline");
	memset(at(SRC), 0, 8);
	expect_wc(p.cq[0], IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
	CHECK(*(uint64_t *)at(DST + 8) == 0xa5a5a5a5a5a5a5a5ull, "inline value");
	wr.send_flags = IBV_SEND_SIGNALED;

	/* Exactly 8 bytes, else the post fails. */
	sge.length = 4;
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == EINVAL && bad == &wr,
	      "4 bytes");
	sge.length = 16;
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == EINVAL, "16 bytes");
	sge.length = 8;

	/* The responder's alignment check: NAK invalid request. */
	wr.wr.rdma.remote_addr = va(DST + 12);
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post misaligned");
	expect_wc(p.cq[0], IBV_WC_REM_INV_REQ_ERR, 0);
	CHECK(*(uint64_t *)at(DST + 8) == 0xa5a5a5a5a5a5a5a5ull,
	      "misaligned write landed");
	pair_restart();

	/* Access: a bad rkey, outside the MR, no REMOTE_WRITE on the QP. */
	wr.wr.rdma.remote_addr = va(DST);
	wr.wr.rdma.rkey = p.mr->rkey + 0x100;
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
	expect_rejected(next_wc(p.cq[0]).status, "bad rkey");
	wr.wr.rdma.rkey = p.mr->rkey;
	wr.wr.rdma.remote_addr = va(BUF_LEN);
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
	expect_rejected(next_wc(p.cq[0]).status, "past the MR");
	memset(&a, 0, sizeof(a));
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	CHECK(ibv_modify_qp(p.qp[1], &a, IBV_QP_ACCESS_FLAGS) == 0,
	      "drop remote write");
	wr.wr.rdma.remote_addr = va(DST);
	CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
	expect_rejected(next_wc(p.cq[0]).status, "QP without REMOTE_WRITE");

	/* Through a window that grants remote write. */
	{
		struct ibv_mw *mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_1);

		CHECK(bind1(mw, p.mr, va(DST), 64, IBV_ACCESS_REMOTE_READ) ==
		      IBV_WC_SUCCESS, "bind read-only");
		wr.wr.rdma.rkey = mw->rkey;
		CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
		expect_rejected(next_wc(p.cq[0]).status, "read-only window");
		CHECK(bind1(mw, p.mr, va(DST), 64, IBV_ACCESS_REMOTE_WRITE) ==
		      IBV_WC_SUCCESS, "bind");
		wr.wr.rdma.rkey = mw->rkey;
		memcpy(at(SRC), &v, 8);
		CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post");
		expect_wc(p.cq[0], IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
		CHECK(memcmp(at(DST), &v, 8) == 0, "through the window");
		CHECK(ibv_dealloc_mw(mw) == 0, "dealloc");
	}
}

/*
 * A pipeline of ATOMIC WRITEs between READs, FETCH_ADDs and WRITEs:
 * completions in order, each result where it belongs. ATOMIC WRITE holds
 * a responder resource, so with max_rd_atomic 16 the pipeline waits for
 * credits too.
 */
static void
atomic_write_pipeline(void)
{
	enum { N = 48 };
	struct ibv_sge sge[N];
	struct ibv_send_wr wr[N], *bad;
	uint64_t *src = (uint64_t *)at(SRC), *dst = (uint64_t *)at(DST);
	int i;

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < N; i++) {
		src[i] = 0x1000 + i;
		dst[i] = 7;
		sge[i].addr = va(SRC + 8 * i);
		sge[i].length = 8;
		sge[i].lkey = p.mr->lkey;
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < N ? &wr[i + 1] : NULL;
		switch (i % 3) {
		case 0:
			wr[i].opcode = IBV_WR_ATOMIC_WRITE;
			wr[i].wr.rdma.remote_addr = va(DST + 8 * i);
			wr[i].wr.rdma.rkey = p.mr->rkey;
			break;
		case 1:
			wr[i].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr[i].wr.atomic.remote_addr = va(DST + 8 * i);
			wr[i].wr.atomic.rkey = p.mr->rkey;
			wr[i].wr.atomic.compare_add = 100;
			break;
		default:
			wr[i].opcode = IBV_WR_RDMA_WRITE;
			wr[i].wr.rdma.remote_addr = va(DST + 8 * i);
			wr[i].wr.rdma.rkey = p.mr->rkey;
			break;
		}
	}
	CHECK(ibv_post_send(p.qp[0], wr, &bad) == 0, "post %d", N);
	for (i = 0; i < N; i++) {
		struct ibv_wc wc = next_wc(p.cq[0]);
		static const enum ibv_wc_opcode op[3] = {
			IBV_WC_ATOMIC_WRITE, IBV_WC_FETCH_ADD, IBV_WC_RDMA_WRITE,
		};

		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i &&
		      wc.opcode == op[i % 3], "WC %d: %s wr_id %" PRIu64
		      " opcode %d", i, ibv_wc_status_str(wc.status), wc.wr_id,
		      wc.opcode);
	}
	for (i = 0; i < N; i++) {
		uint64_t want = i % 3 == 1 ? 107 : 0x1000 + (uint64_t)i;

		CHECK(dst[i] == want, "dst[%d] %#" PRIx64 ", want %#" PRIx64,
		      i, dst[i], want);
		if (i % 3 == 1)
			CHECK(src[i] == 7, "fetch-add %d returned %" PRIu64,
			      i, src[i]);
	}
}

/*
 * ibv_reg_mr(3) access rules: remote write or atomic needs local write;
 * relaxed ordering and other best-effort flags of the optional range are
 * accepted; zero-based and on-demand MRs are not built (EOPNOTSUPP);
 * unknown flags outside the optional range are EINVAL.
 */
static void
reg_mr_access_rules(void)
{
	static const struct {
		unsigned int access;
		int err;
	} rule[] = {
		{ IBV_ACCESS_REMOTE_WRITE, EINVAL },
		{ IBV_ACCESS_REMOTE_ATOMIC, EINVAL },
		{ IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ, EINVAL },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, 0 },
		{ IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND, 0 },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING, 0 },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_OPTIONAL_FIRST << 5, 0 },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED, EOPNOTSUPP },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, EOPNOTSUPP },
		{ IBV_ACCESS_LOCAL_WRITE | 1u << 15, EINVAL },
	};
	struct ibv_mr *mr;
	unsigned int i;

	for (i = 0; i < DIM(rule); i++) {
		errno = 0;
		mr = ibv_reg_mr_iova2(p.pd, at(DST), 4096, va(DST),
				      rule[i].access);
		CHECK((mr != NULL) == (rule[i].err == 0) &&
		      (mr != NULL || errno == rule[i].err),
		      "access %#x: %s, errno %d, want %d", rule[i].access,
		      mr ? "registered" : "refused", errno, rule[i].err);
		if (mr != NULL)
			CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	}
	/* A relaxed-ordering MR takes remote writes like any other. */
	mr = ibv_reg_mr_iova2(p.pd, at(DST), 4096, va(DST),
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_RELAXED_ORDERING);
	CHECK(mr != NULL, "relaxed ordering MR");
	CHECK(remote_write(va(DST), 512, mr->rkey, 61) == IBV_WC_SUCCESS,
	      "WRITE into it");
	check_pattern(DST, 512, 61);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
}

/*
 * ibv_query_qp_data_in_order(3): the responder places every message's
 * bytes in order with the CPU, so WRITE, SEND and READ data may be polled;
 * other operations are not described (0), nor is a non-zero flags field.
 */
static void
data_in_order(void)
{
	static const enum ibv_wr_opcode yes[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND,
		IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ,
	};
	static const enum ibv_wr_opcode no[] = {
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_LOCAL_INV, IBV_WR_BIND_MW, IBV_WR_TSO,
	};
	unsigned int i;

	for (i = 0; i < DIM(yes); i++) {
		CHECK(ibv_query_qp_data_in_order(p.qp[0], yes[i], 0) == 1,
		      "opcode %d", yes[i]);
		CHECK(ibv_query_qp_data_in_order(p.qp[0], yes[i], 1) == 0,
		      "opcode %d with flags 1", yes[i]);
	}
	for (i = 0; i < DIM(no); i++)
		CHECK(ibv_query_qp_data_in_order(p.qp[0], no[i], 0) == 0,
		      "opcode %d", no[i]);
	/* In order means: the last byte of a WRITE is placed last. A reader
	 * polling it sees the whole message once it changes.
	 */
	memset(at(DST), 0, 65536);
	fill_pattern(at(SRC), 65536, 99);
	at(SRC)[65535] = 0xff;
	CHECK(post_rdma(p.qp[0], IBV_WR_RDMA_WRITE, 65536, va(DST),
			p.mr->rkey) == 0, "post");
	{
		volatile uint8_t *last = at(DST + 65535);
		double deadline = check_now() + 5;

		while (*last != 0xff && check_now() < deadline)
			;
		CHECK(*last == 0xff, "last byte never arrived");
		CHECK(memcmp(at(DST), at(SRC), 65535) == 0,
		      "bytes before the last one missing when it landed");
	}
	expect_wc(p.cq[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
}

/*
 * A run of ATOMIC WRITEs: each lands once, in order; their ACKs are
 * cumulative, so the responder sends fewer ACKs than requests.
 */
static void
atomic_write_run(void)
{
	enum { N = 48 };
	struct ibv_sge sge[N];
	struct ibv_send_wr wr[N], *bad;
	uint64_t *src = (uint64_t *)at(SRC), *dst = (uint64_t *)at(DST);
	uint64_t acks = dev_counter(p.ctx, "ack_sent");
	int i;

	memset(wr, 0, sizeof(wr));
	for (i = 0; i < N; i++) {
		src[i] = 0xa000 + i;
		dst[i] = 0;
		sge[i] = (struct ibv_sge){ .addr = va(SRC + 8 * i), .length = 8,
					   .lkey = p.mr->lkey };
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_ATOMIC_WRITE;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = va(DST + 8 * i);
		wr[i].wr.rdma.rkey = p.mr->rkey;
		wr[i].next = i + 1 < N ? &wr[i + 1] : NULL;
	}
	CHECK(ibv_post_send(p.qp[0], wr, &bad) == 0, "post %d", N);
	for (i = 0; i < N; i++) {
		struct ibv_wc wc = next_wc(p.cq[0]);

		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i &&
		      wc.opcode == IBV_WC_ATOMIC_WRITE, "WC %d: %s", i,
		      ibv_wc_status_str(wc.status));
		CHECK(dst[i] == 0xa000 + (uint64_t)i, "dst[%d] %#" PRIx64, i,
		      dst[i]);
	}
	acks = dev_counter(p.ctx, "ack_sent") - acks;
	CHECK(acks >= 1 && acks < N, "%" PRIu64 " ACKs for %d ATOMIC WRITEs",
	      acks, N);
}

/*
 * Unsignaled ATOMIC WRITEs and READs, more than max_rd_atomic (16) of them
 * in each of three batches, only the last WR of a batch signaled: each
 * one's READ/atomic credit comes back when the completer retires it,
 * reported or not (a credit kept stalls the requester for good), and every
 * one lands.
 */
static void
atomic_write_unsignaled(void)
{
	enum { N = 48, ROUNDS = 3 };
	struct ibv_sge sge[N];
	struct ibv_send_wr wr[N], *bad;
	uint64_t *src = (uint64_t *)at(SRC), *dst = (uint64_t *)at(DST);
	int i, r;

	for (r = 0; r < ROUNDS; r++) {
		memset(wr, 0, sizeof(wr));
		for (i = 0; i < N; i++) {
			int read = i % 8 == 7;

			src[i] = read ? 0 : 0xb000 + 0x100 * r + i;
			dst[i] = read ? 0xc000 + 0x100 * r + i : 0;
			sge[i] = (struct ibv_sge){ .addr = va(SRC + 8 * i),
						   .length = 8,
						   .lkey = p.mr->lkey };
			wr[i].wr_id = 100 * r + i;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].opcode = read ? IBV_WR_RDMA_READ :
					      IBV_WR_ATOMIC_WRITE;
			wr[i].send_flags = i == N - 1 ? IBV_SEND_SIGNALED : 0;
			wr[i].wr.rdma.remote_addr = va(DST + 8 * i);
			wr[i].wr.rdma.rkey = p.mr->rkey;
			wr[i].next = i + 1 < N ? &wr[i + 1] : NULL;
		}
		CHECK(ibv_post_send(p.qp[0], wr, &bad) == 0, "post %d", N);
		{
			struct ibv_wc wc = next_wc(p.cq[0]);

			CHECK(wc.status == IBV_WC_SUCCESS &&
			      wc.wr_id == (uint64_t)(100 * r + N - 1),
			      "round %d: WC %" PRIu64 " %s", r, wc.wr_id,
			      ibv_wc_status_str(wc.status));
		}
		for (i = 0; i < N; i++) {
			uint64_t want = i % 8 == 7 ? 0xc000 + 0x100 * r + i :
					0xb000 + 0x100 * r + i;
			uint64_t got = i % 8 == 7 ? src[i] : dst[i];

			CHECK(got == want, "round %d WR %d: %#" PRIx64, r, i,
			      got);
		}
	}
}

/* The same operations through ibv_wr_* on extended QPs and CQs. */
static void
wr_api(void)
{
	struct pair x;
	struct pair_opts o = OPTS;
	struct ibv_mw *mw;
	struct ibv_mw_bind_info bi;
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	struct ibv_sge rs;
	struct ibv_recv_wr rwr = { .wr_id = 3, .sg_list = &rs, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	const uint64_t v = 0xfeedfacecafebeefull;
	struct ibv_wc wc;
	uint32_t k;
	int ret;

	pair_close(&p);
	pair_open_ex(&x, &o, IBV_WC_STANDARD_FLAGS, SEND_OPS);
	qp_connect(x.qp[0], x.qp[1]->qp_num, &o, x.mtu, 10, 20);
	qp_connect(x.qp[1], x.qp[0]->qp_num, &o, x.mtu, 20, 10);
	p = x;

	/* Bind a type 2 window on qp[1], then WRITE and ATOMIC WRITE
	 * through it from qp[0] in one batch.
	 */
	mw = ibv_alloc_mw(p.pd, IBV_MW_TYPE_2);
	CHECK(mw != NULL, "alloc");
	k = ibv_inc_rkey(mw->rkey);
	bi = (struct ibv_mw_bind_info){ .mr = p.mr, .addr = va(DST),
		.length = 4096, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
						   IBV_ACCESS_REMOTE_READ };
	ibv_wr_start(p.qpx[1]);
	p.qpx[1]->wr_id = 40;
	p.qpx[1]->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(p.qpx[1], mw, k, &bi);
	CHECK(ibv_wr_complete(p.qpx[1]) == 0, "wr_complete bind");
	wc = next_wc(p.cq[1]);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW &&
	      wc.wr_id == 40, "bind: %s", ibv_wc_status_str(wc.status));
	CHECK(mw->rkey == k, "mw->rkey %#x, want %#x", mw->rkey, k);

	fill_pattern(at(SRC), 512, 51);
	ibv_wr_start(p.qpx[0]);
	p.qpx[0]->wr_id = 41;
	p.qpx[0]->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(p.qpx[0], k, va(DST + 1024));
	ibv_wr_set_sge(p.qpx[0], p.mr->lkey, va(SRC), 512);
	p.qpx[0]->wr_id = 42;
	ibv_wr_atomic_write(p.qpx[0], k, va(DST + 2048), &v);
	CHECK(ibv_wr_complete(p.qpx[0]) == 0, "wr_complete");
	expect_wc(p.cq[0], IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	expect_wc(p.cq[0], IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE);
	check_pattern(DST + 1024, 512, 51);
	CHECK(*(uint64_t *)at(DST + 2048) == v, "atomic write via wr_*");

	/* ibv_wr_send_inv: the receiver learns the key through the extended
	 * CQ (ibv_wc_read_invalidated_rkey).
	 */
	rs = (struct ibv_sge){ .addr = va(DST + 8192), .length = 256,
			       .lkey = p.mr->lkey };
	CHECK(ibv_post_recv(p.qp[1], &rwr, &rbad) == 0, "post_recv");
	ibv_wr_start(p.qpx[0]);
	p.qpx[0]->wr_id = 43;
	ibv_wr_send_inv(p.qpx[0], k);
	ibv_wr_set_inline_data(p.qpx[0], (void *)"invalidate", 10);
	CHECK(ibv_wr_complete(p.qpx[0]) == 0, "wr_complete send_inv");
	expect_wc(p.cq[0], IBV_WC_SUCCESS, IBV_WC_SEND);
	{
		double deadline = check_now() + 5;

		while ((ret = ibv_start_poll(p.cqx[1], &pa)) == ENOENT &&
		       check_now() < deadline)
			;
		CHECK(ret == 0, "start_poll %d", ret);
		CHECK(p.cqx[1]->status == IBV_WC_SUCCESS &&
		      p.cqx[1]->wr_id == 3, "recv %s",
		      ibv_wc_status_str(p.cqx[1]->status));
		CHECK(ibv_wc_read_opcode(p.cqx[1]) == IBV_WC_RECV &&
		      (ibv_wc_read_wc_flags(p.cqx[1]) & IBV_WC_WITH_INV) &&
		      ibv_wc_read_invalidated_rkey(p.cqx[1]) == k &&
		      ibv_wc_read_byte_len(p.cqx[1]) == 10,
		      "flags %#x rkey %#x", ibv_wc_read_wc_flags(p.cqx[1]),
		      ibv_wc_read_invalidated_rkey(p.cqx[1]));
		ibv_end_poll(p.cqx[1]);
	}
	CHECK(memcmp(at(DST + 8192), "invalidate", 10) == 0, "send bytes");
	expect_rejected(remote_read(va(DST), 8, k), "after wr_send_inv");

	/* Bind again, then ibv_wr_local_inv. */
	k = ibv_inc_rkey(k);
	ibv_wr_start(p.qpx[1]);
	p.qpx[1]->wr_id = 44;
	p.qpx[1]->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(p.qpx[1], mw, k, &bi);
	p.qpx[1]->wr_id = 45;
	ibv_wr_local_inv(p.qpx[1], k);
	CHECK(ibv_wr_complete(p.qpx[1]) == 0, "wr_complete bind + inv");
	expect_wc(p.cq[1], IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	expect_wc(p.cq[1], IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	expect_rejected(remote_read(va(DST), 8, k), "after wr_local_inv");

	/* A batch with a bad bind (no bind info) is refused whole. */
	ibv_wr_start(p.qpx[1]);
	ibv_wr_local_inv(p.qpx[1], k);
	ibv_wr_bind_mw(p.qpx[1], mw, k, NULL);
	CHECK(ibv_wr_complete(p.qpx[1]) == EINVAL, "bad batch");
	CHECK(ibv_poll_cq(p.cq[1], 1, &wc) == 0, "nothing of it ran");
	/* ATOMIC WRITE without its 8 bytes: refused whole as well. */
	ibv_wr_start(p.qpx[0]);
	ibv_wr_atomic_write(p.qpx[0], p.mr->rkey, va(DST), NULL);
	CHECK(ibv_wr_complete(p.qpx[0]) == EINVAL, "atomic write, no data");

	/* What the engine and the responder refuse, posted with ibv_wr_*. */
	ibv_wr_start(p.qpx[0]);
	p.qpx[0]->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(p.qpx[0], p.mr->rkey, va(DST + 4), &v);
	CHECK(ibv_wr_complete(p.qpx[0]) == 0, "misaligned atomic write");
	expect_wc(p.cq[0], IBV_WC_REM_INV_REQ_ERR, 0);
	pair_restart();
	{
		struct ibv_mr *nobind = ibv_reg_mr(p.pd, at(DST), 4096,
						   IBV_ACCESS_LOCAL_WRITE);
		struct ibv_mw_bind_info nb = { .mr = nobind, .addr = va(DST),
			.length = 64, .mw_access_flags = IBV_ACCESS_REMOTE_READ };

		CHECK(nobind != NULL, "reg_mr");
		ibv_wr_start(p.qpx[1]);
		ibv_wr_bind_mw(p.qpx[1], mw, ibv_inc_rkey(k), &nb);
		CHECK(ibv_wr_complete(p.qpx[1]) == 0, "bind to MR without bind");
		expect_bind_error(next_wc(p.cq[1]).status, "wr_bind_mw");
		CHECK(ibv_dereg_mr(nobind) == 0, "dereg");
	}
	ibv_wr_start(p.qpx[1]);
	ibv_wr_local_inv(p.qpx[1], p.mr->rkey);
	CHECK(ibv_wr_complete(p.qpx[1]) == 0, "local_inv of an MR");
	expect_wc(p.cq[1], IBV_WC_LOC_QP_OP_ERR, 0);
	pair_restart();
	CHECK(ibv_post_recv(p.qp[1], &rwr, &rbad) == 0, "post_recv");
	ibv_wr_start(p.qpx[0]);
	ibv_wr_send_inv(p.qpx[0], k);		/* invalidated above */
	ibv_wr_set_sge(p.qpx[0], p.mr->lkey, va(SRC), 16);
	CHECK(ibv_wr_complete(p.qpx[0]) == 0, "send_inv of a stale key");
	expect_wc(p.cq[0], IBV_WC_REM_INV_REQ_ERR, 0);
	pair_restart();
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc");
}

int
main(void)
{
	pair_open(&p, &OPTS);
	pair_connect(&p, &OPTS);
	RUN(device_caps);
	RUN(alloc_mw_types);
	RUN(mw1_bind_access);
	RUN(mw1_zero_based);
	RUN(mw1_bind_rules);
	RUN(mw2_bind_post_send);
	RUN(mw2_qp_destroy_invalidates);
	RUN(mw2_qp_destroy_counts);
	RUN(send_with_inv);
	RUN(uc_opcode_rules);
	RUN(atomic_write_classic);
	RUN(atomic_write_pipeline);
	RUN(atomic_write_run);
	RUN(atomic_write_unsignaled);
	RUN(data_in_order);
	RUN(reg_mr_access_rules);
	RUN(wr_api);
	pair_close(&p);
	CHECK_DONE();
}
